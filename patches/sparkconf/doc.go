// Package sparkconf reads and writes Spark properties as spark-defaults.conf
// holds them: the grammar of java.util.Properties.load, the escaping that
// makes what is written read back the same, the text no property may
// hold, the digest of a configuration text, and Spark's JVM memory sizes.
package sparkconf
