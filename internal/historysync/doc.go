// Package historysync mirrors the event logs the sidecars ship into an
// S3-compatible bucket into a local directory, in Spark's own layout, for
// a Spark HistoryServer that reads that directory with
// spark.history.fs.logDirectory=file:... (`sparklet history-sync`). The
// history server then needs neither hadoop-aws nor the AWS SDK, nor the
// store's credential, which only the mirroring process holds.
package historysync
