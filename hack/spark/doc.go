// Package spark knows the pinned Spark distributions and where they live.
// The pins are in hack/spark/versions; hack/spark/install.sh installs
// them.
package spark
