// Package sparklog reads what stock Spark and the examples' scripts print
// in a driver's log.
package sparklog
