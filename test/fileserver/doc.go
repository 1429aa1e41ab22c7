// Package fileserver serves the files a test's pods fetch over plain
// HTTP, on an address only those pods reach, and URLs that answer only
// once the test opens them.
package fileserver
