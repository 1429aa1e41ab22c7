module github.com/sparklet/sparklet

go 1.26.0

require (
	github.com/prometheus/client_golang v1.23.2 // indirect
	github.com/sirupsen/logrus v1.10.2 // indirect
	go.yaml.in/yaml/v2 v2.4.3 // indirect
	golang.org/x/sys v0.46.0 // indirect
	gomodules.xyz/jsonpatch/v2 v2.5.0 // indirect
	k8s.io/api v0.36.6 // indirect
	k8s.io/apimachinery v0.36.6 // indirect
	k8s.io/client-go v0.36.6 // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
)
