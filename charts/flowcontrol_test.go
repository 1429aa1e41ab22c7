package charts

import (
	"context"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/sparklet/sparklet/test/cluster"
)

// flowControlName is the FlowSchema's and the priority level's name.
const flowControlName = release + "-sparklet-drivers"

// TestFlowControlRenders: the FlowSchema matches the driver ServiceAccount
// in every listed namespace, once, and sends it to the chart's bounded
// priority level; without a known namespace, or disabled, nothing renders.
func TestFlowControlRenders(t *testing.T) {
	for _, tc := range []struct {
		values     []string
		set        []string
		namespaces []string // nil: nothing rendered
		precedence int32
		shares     int32
		lend       int32
		borrow     int32
		queuing    flowcontrolv1.QueuingConfiguration
	}{
		{values: nil},
		{values: []string{"namespace-list.yaml"}, namespaces: []string{"team-a", "team-b"}, precedence: 1000, shares: 10, lend: 50, borrow: 0,
			queuing: flowcontrolv1.QueuingConfiguration{Queues: 64, HandSize: 6, QueueLengthLimit: 128}},
		{values: []string{"flow-control.yaml"}, namespaces: []string{"team-a", "team-c"}, precedence: 500, shares: 3, lend: 0, borrow: 20,
			queuing: flowcontrolv1.QueuingConfiguration{Queues: 8, HandSize: 2, QueueLengthLimit: 16}},
		{values: []string{"namespace-list.yaml", "flow-control-off.yaml"}},
	} {
		t.Run(strings.Join(append([]string{"default"}, tc.values...), "+"), func(t *testing.T) {
			r := render(t, tc.values...)
			fsKey, plKey := "FlowSchema//"+flowControlName, "PriorityLevelConfiguration//"+flowControlName
			if tc.namespaces == nil {
				for _, key := range []string{fsKey, plKey} {
					if _, ok := r.docs[key]; ok {
						t.Errorf("%s rendered", key)
					}
				}
				return
			}
			var fs flowcontrolv1.FlowSchema
			r.get(t, fsKey, &fs)
			var pl flowcontrolv1.PriorityLevelConfiguration
			r.get(t, plKey, &pl)
			if fs.Spec.PriorityLevelConfiguration.Name != pl.Name {
				t.Errorf("FlowSchema sends to %q, the level is %q", fs.Spec.PriorityLevelConfiguration.Name, pl.Name)
			}
			if fs.Spec.MatchingPrecedence != tc.precedence {
				t.Errorf("matchingPrecedence = %d, want %d", fs.Spec.MatchingPrecedence, tc.precedence)
			}
			if fs.Spec.DistinguisherMethod == nil || fs.Spec.DistinguisherMethod.Type != flowcontrolv1.FlowDistinguisherMethodByUserType {
				t.Errorf("distinguisherMethod = %+v, want ByUser", fs.Spec.DistinguisherMethod)
			}
			var subjects []string
			for _, rule := range fs.Spec.Rules {
				for _, s := range rule.Subjects {
					if s.Kind != flowcontrolv1.SubjectKindServiceAccount {
						t.Errorf("subject %+v is not a ServiceAccount", s)
						continue
					}
					subjects = append(subjects, s.ServiceAccount.Namespace+"/"+s.ServiceAccount.Name)
				}
				all := len(rule.ResourceRules) == 1 && rule.ResourceRules[0].ClusterScope &&
					reflect.DeepEqual(rule.ResourceRules[0].Namespaces, []string{"*"}) && reflect.DeepEqual(rule.ResourceRules[0].Resources, []string{"*"}) &&
					reflect.DeepEqual(rule.ResourceRules[0].Verbs, []string{"*"}) && reflect.DeepEqual(rule.ResourceRules[0].APIGroups, []string{"*"})
				if !all {
					t.Errorf("resourceRules %+v do not cover every request of the sidecar", rule.ResourceRules)
				}
			}
			var want []string
			for _, ns := range tc.namespaces {
				want = append(want, ns+"/spark-driver")
			}
			if !reflect.DeepEqual(subjects, want) {
				t.Errorf("subjects = %v, want %v", subjects, want)
			}
			l := pl.Spec.Limited
			if pl.Spec.Type != flowcontrolv1.PriorityLevelEnablementLimited || l == nil {
				t.Fatalf("priority level %+v is not Limited", pl.Spec)
			}
			if *l.NominalConcurrencyShares != tc.shares || *l.LendablePercent != tc.lend || *l.BorrowingLimitPercent != tc.borrow {
				t.Errorf("shares %d, lendable %d%%, borrowing limit %d%%; want %d, %d%%, %d%%",
					*l.NominalConcurrencyShares, *l.LendablePercent, *l.BorrowingLimitPercent, tc.shares, tc.lend, tc.borrow)
			}
			if l.LimitResponse.Type != flowcontrolv1.LimitResponseTypeQueue || l.LimitResponse.Queuing == nil || *l.LimitResponse.Queuing != tc.queuing {
				t.Errorf("limitResponse = %+v, want queuing %+v", l.LimitResponse, tc.queuing)
			}
		})
	}
}

// TestBadFlowControlValuesAreRefused: each names the value at fault.
func TestBadFlowControlValuesAreRefused(t *testing.T) {
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{"flowControl.matchingPrecedence=9000"}, "/flowControl/matchingPrecedence"},
		{[]string{"flowControl.nominalConcurrencyShares=0"}, "/flowControl/nominalConcurrencyShares"},
		{[]string{"flowControl.lendablePercent=101"}, "/flowControl/lendablePercent"},
		{[]string{"flowControl.namespaces={Team_C}"}, "/flowControl/namespaces/0"},
		{[]string{"flowControl.queuing.queues=0"}, "/flowControl/queuing/queues"},
		{[]string{"namespaces.list={team-a}", "flowControl.queuing.queues=4", "flowControl.queuing.handSize=5"}, "flowControl.queuing.handSize (5) must not exceed flowControl.queuing.queues (4)"},
		{[]string{"flowControl.queueLengthLimit=10"}, "queueLengthLimit"},
	} {
		checkRefused(t, tc.set, tc.want, "--kube-version", kubeVersion)
	}
	run(t, helm(t), "lint", "sparklet", "--strict", "--kube-version", kubeVersion, "-f", "testdata/flow-control.yaml")
}

// TestFlowSchemaClassifiesDriverRequests applies the chart to the local
// API server and asks it, through the X-Kubernetes-PF-* response headers,
// how it classified requests: the driver ServiceAccount's go to the
// chart's FlowSchema and priority level, another ServiceAccount's in the
// same namespace do not.
func TestFlowSchemaClassifiesDriverRequests(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := cluster.StartForTest(ctx, t, binDir(t))
	r := render(t, "namespace-list.yaml")
	applyChart(ctx, t, c, r.docs, 4)
	cs := c.Client()
	fs, err := cs.FlowcontrolV1().FlowSchemas().Get(ctx, flowControlName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pl, err := cs.FlowcontrolV1().PriorityLevelConfigurations().Get(ctx, flowControlName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ServiceAccounts("team-a").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "observer"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	driver := tokenClient(ctx, t, c, "team-a", "spark-driver")
	other := tokenClient(ctx, t, c, "team-a", "observer")

	// The API server loads new FlowSchemas asynchronously.
	var got classification
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got = classify(ctx, t, driver, http.MethodGet, "/api/v1/namespaces/team-a/pods")
		return got.flowSchema == string(fs.UID), nil
	})
	if err != nil {
		t.Fatalf("the driver ServiceAccount's LIST went to FlowSchema UID %q, not %s (%s)", got.flowSchema, fs.Name, fs.UID)
	}
	if got.priorityLevel != string(pl.UID) {
		t.Errorf("priority level UID %q, want %s's %s", got.priorityLevel, pl.Name, pl.UID)
	}
	// A create, a denied request and a GET of a missing object go the
	// same way: classification comes before authorization.
	for _, req := range [][2]string{{http.MethodPost, "/api/v1/namespaces/team-a/configmaps?dryRun=All"},
		{http.MethodGet, "/api/v1/namespaces/team-b/configmaps"}, {http.MethodGet, "/api/v1/namespaces/team-a/pods/none"}} {
		if g := classify(ctx, t, driver, req[0], req[1]); g.flowSchema != string(fs.UID) || g.priorityLevel != string(pl.UID) {
			t.Errorf("driver %s %s went to FlowSchema UID %q, priority level UID %q", req[0], req[1], g.flowSchema, g.priorityLevel)
		}
	}
	if g := classify(ctx, t, other, http.MethodGet, "/api/v1/namespaces/team-a/pods"); g.flowSchema == string(fs.UID) || g.flowSchema == "" {
		t.Errorf("another ServiceAccount's request went to FlowSchema UID %q, want another one", g.flowSchema)
	}
}

// classification is what the API server reports it did with a request.
type classification struct{ flowSchema, priorityLevel string }

func classify(ctx context.Context, t *testing.T, client apiClient, method, path string) classification {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"probe"}}`)
	}
	req, err := http.NewRequestWithContext(ctx, method, client.host+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return classification{resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID"), resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID")}
}

// apiClient is an HTTP client for the API server at host.
type apiClient struct {
	*http.Client
	host string
}

// tokenClient authenticates as the ServiceAccount ns/name.
func tokenClient(ctx context.Context, t *testing.T, c *cluster.Cluster, ns, name string) apiClient {
	t.Helper()
	tok, err := c.Client().CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s/%s: %v", ns, name, err)
	}
	cfg := c.RESTConfig()
	cfg = &rest.Config{Host: cfg.Host, BearerToken: tok.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData, CAFile: cfg.CAFile}}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return apiClient{client, cfg.Host}
}
