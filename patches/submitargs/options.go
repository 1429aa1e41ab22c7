package submitargs

// The option table of spark-submit, ported from Spark's
// launcher/src/main/java/org/apache/spark/launcher/SparkSubmitOptionParser.java
// (3.5.9, 4.0.5 and 4.3.0; checked against the constants and the opts and
// switches arrays of each release's spark-launcher jar). The names must
// match a word exactly, as findCliOption compares with equals.

// withValue are the options that take a value: the next word, or the text
// after "=" in the --name=value form. Each entry lists a name and its
// aliases; the first is the name Option.Name carries.
var withValue = [][]string{
	{"--archives"},
	{"--class"},
	{"--conf", "-c"},
	{"--deploy-mode"},
	{"--driver-class-path"},
	{"--driver-cores"},
	{"--driver-default-class-path"}, // 4.0+
	{"--driver-java-options"},
	{"--driver-library-path"},
	{"--driver-memory"},
	{"--executor-cores"},
	{"--executor-memory"},
	{"--files"},
	{"--jars"},
	{"--keytab"},
	{"--kill"},
	{"--master"},
	{"--remote"},
	{"--name"},
	{"--num-executors"},
	{"--packages"},
	{"--exclude-packages"},
	{"--principal"},
	{"--properties-file"},
	{"--extra-properties-file"}, // 4.3+
	{"--proxy-user"},
	{"--py-files"},
	{"--queue"},
	{"--repositories"},
	{"--status"},
	{"--total-executor-cores"},
}

// switches are the options that take no value.
var switches = [][]string{
	{"--help", "-h"},
	{"--supervise"},
	{"--usage-error"},
	{"--verbose", "-v"},
	{"--version"},
	{"--load-spark-defaults"}, // 4.0+
}

// confKeys maps the options that stand for a Spark property to it, as
// SparkSubmitArguments.loadEnvironmentArguments and SparkSubmit's
// OptionAssigner list do (core/src/main/scala/org/apache/spark/deploy/,
// 3.5.x and 4.x). The option wins over a --conf of the same key, whatever
// their order: spark-submit reads the option first and falls back to the
// property.
var confKeys = map[string]string{
	"--master":              "spark.master",
	"--remote":              "spark.remote",
	"--deploy-mode":         "spark.submit.deployMode",
	"--name":                "spark.app.name",
	"--driver-memory":       "spark.driver.memory",
	"--driver-cores":        "spark.driver.cores",
	"--driver-java-options": "spark.driver.extraJavaOptions",
	"--driver-library-path": "spark.driver.extraLibraryPath",
	"--driver-class-path":   "spark.driver.extraClassPath",
	// 4.0+: SparkLauncher.DRIVER_DEFAULT_EXTRA_CLASS_PATH.
	"--driver-default-class-path": "spark.driver.defaultExtraClassPath",
	"--executor-memory":           "spark.executor.memory",
	"--executor-cores":            "spark.executor.cores",
	"--num-executors":             "spark.executor.instances",
	"--total-executor-cores":      "spark.cores.max",
	"--jars":                      "spark.jars",
	"--files":                     "spark.files",
	"--archives":                  "spark.archives",
	"--py-files":                  "spark.submit.pyFiles",
	"--packages":                  "spark.jars.packages",
	"--exclude-packages":          "spark.jars.excludes",
	"--repositories":              "spark.jars.repositories",
	"--queue":                     "spark.yarn.queue",
	"--principal":                 "spark.kerberos.principal",
	"--keytab":                    "spark.kerberos.keytab",
	"--supervise":                 "spark.driver.supervise",
}

// mixedClasses are the main classes whose launch scripts let spark-submit
// options and the shell's own arguments mix: SparkSubmitCommandBuilder's
// specialClasses (spark-shell's and spark-sql's, the Thrift server's and
// the Spark Connect server's, in launcher/.../SparkSubmitCommandBuilder.java
// of 3.5.9 and 4.3.0).
var mixedClasses = map[string]bool{
	"org.apache.spark.repl.Main":                               true,
	"org.apache.spark.sql.hive.thriftserver.SparkSQLCLIDriver": true,
	"org.apache.spark.sql.hive.thriftserver.HiveThriftServer2": true,
	ConnectServerClass: true,
}

// ConnectServerClass is the Spark Connect server's main class.
const ConnectServerClass = "org.apache.spark.sql.connect.service.SparkConnectServer"

// mixedResources are the first arguments that make the launcher accept
// mixed arguments (SparkSubmitCommandBuilder's constructor): bin/pyspark
// and bin/sparkR run spark-submit with them.
var mixedResources = map[string]bool{"pyspark-shell-main": true, "sparkr-shell-main": true}

func lookup(table [][]string, word string) (string, bool) {
	for _, names := range table {
		for _, n := range names {
			if n == word {
				return names[0], true
			}
		}
	}
	return "", false
}
