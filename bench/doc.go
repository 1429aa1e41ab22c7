// Command bench measures sparklet against Spark's defaults and the API server.
// It runs them side by side in one run on the local control plane (`make
// bench`) and writes bench/results/latest.md and a PNG chart. Timings
// depend on the machine; compare the ratios.
package main
