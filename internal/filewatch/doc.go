// Package filewatch reloads files mounted from Secrets and ConfigMaps.
// It polls, compares bytes and reports changes. Polling works through the
// symlink swaps the kubelet makes, where inotify does not.
package filewatch
