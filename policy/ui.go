package policy

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// UIHost is the Ingress host for a driver: Host with {{name}},
// {{namespace}} and {{app}} replaced.
func (i UIIngress) UIHost(name, namespace, app string) string {
	return strings.NewReplacer("{{name}}", name, "{{namespace}}", namespace, "{{app}}", app).Replace(i.Host)
}

func (v *validator) uiIngress(at string, i *UIIngress) {
	if i == nil {
		return
	}
	host := i.UIHost("driver", "namespace", "spark-0123456789abcdef")
	if i.Host == "" {
		v.add(at+".host", "is required, e.g. \"{{name}}.spark.example.com\"")
	} else if msgs := validation.IsDNS1123Subdomain(host); len(msgs) > 0 {
		v.add(at+".host", "%q does not give a DNS name (%s); use {{name}}, {{namespace}} and {{app}} in a host such as \"{{name}}.spark.example.com\"", i.Host, strings.Join(msgs, "; "))
	}
	if i.TLSSecretName != "" {
		v.dnsSubdomain(at+".tlsSecretName", i.TLSSecretName)
	}
}
