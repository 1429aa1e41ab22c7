// Package eventlogs ships the event logs a Spark driver writes to a local
// directory into an object store, as they are finished: each rolled event
// file as soon as the next one starts, and the rest when the driver's JVM
// has ended. The keys are the files' paths under the directory, so the
// store holds the layout Spark's own writer makes (EventLogFileWriters.scala,
// 3.5.9 to 4.3.0) and a history server reads it as it would read the
// directory.
package eventlogs
