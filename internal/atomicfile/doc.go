// Package atomicfile replaces files whole: readers see the old or the new.
// A file is written under a hidden temporary name in the same directory
// and renamed over the old one, so no reader sees part of either.
package atomicfile
