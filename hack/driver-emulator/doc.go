// Command driver-emulator runs the emulated Spark driver from the shell.
// It plays a Spark driver JVM against the sparklet sidecar or straight
// against an API server: it starts, asks for --executors executors, waits
// until they run, holds, kills --kill of them, holds again and stops, then
// prints one line of JSON statistics.
//
//	go run ./hack/driver-emulator --server http://127.0.0.1:7443 --token-file tok \
//	    --namespace spark --app-id spark-demo --driver-pod driver --image apache/spark:4.0.0 --executors 50
//	go run ./hack/driver-emulator --kubeconfig kubeconfig --namespace spark ... --mode 3.5
package main
