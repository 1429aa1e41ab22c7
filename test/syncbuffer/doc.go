// Package syncbuffer is a log sink that goroutines may write to while a
// test reads it.
package syncbuffer
