package sidecar

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/internal/kubecore"
	"github.com/sparklet/sparklet/policy"
)

// gRPC status codes the proxy answers with (google.golang.org/grpc/codes).
const (
	grpcOK                = 0
	grpcInvalidArgument   = 3
	grpcPermissionDenied  = 7
	grpcResourceExhausted = 8
	grpcUnavailable       = 14
	grpcUnauthenticated   = 16
)

// grpcCodeNames name the codes in metrics and logs.
var grpcCodeNames = map[int]string{
	grpcOK: "OK", grpcInvalidArgument: "INVALID_ARGUMENT", grpcPermissionDenied: "PERMISSION_DENIED", grpcResourceExhausted: "RESOURCE_EXHAUSTED", grpcUnavailable: "UNAVAILABLE", grpcUnauthenticated: "UNAUTHENTICATED",
}

const (
	// connectReviewTTL is how long a token's reviews are reused: a client
	// sends its token with every RPC, and a query is many RPCs.
	connectReviewTTL = 10 * time.Second
	// connectReviewCache bounds the tokens remembered.
	connectReviewCache = 1024
)

// The connection strings clients are told to use, without and with TLS.
const (
	connectCleartext = "sc://HOST:PORT/;token=TOKEN"
	connectTLS       = "sc://HOST:PORT/;use_ssl=true;token=TOKEN"
)

// connectAuth admits Spark Connect clients by their Kubernetes identity:
// the bearer token must pass a TokenReview, and its user a
// SubjectAccessReview of the policy's ConnectAccess in the driver's
// namespace. Verdicts are cached for connectReviewTTL by the token's
// digest; a failure to reach the API server is never cached.
type connectAuth struct {
	client    kubecore.Interface
	namespace string
	access    policy.ConnectAccess
	log       *logrus.Entry
	now       func() time.Time
	// connectWith is the connection string a refused client is told to use.
	connectWith string

	mu    sync.Mutex
	cache map[[sha256.Size]byte]verdict
}

// verdict is the answer for one token: code grpcOK admits user.
type verdict struct {
	user    string
	code    int
	message string
	expires time.Time
}

func newConnectAuth(client kubecore.Interface, namespace string, access policy.ConnectAccess, log *logrus.Entry) *connectAuth {
	return &connectAuth{client: client, namespace: namespace, access: access, log: log, now: time.Now,
		connectWith: connectCleartext, cache: map[[sha256.Size]byte]verdict{}}
}

// admit judges a request's Authorization header.
func (a *connectAuth) admit(ctx context.Context, authorization string) verdict {
	scheme, token, _ := strings.Cut(authorization, " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return verdict{code: grpcUnauthenticated, message: "no Kubernetes token: this Spark Connect server admits clients by their " +
			"Kubernetes identity; connect with " + a.connectWith + ", TOKEN from `kubectl create token SERVICEACCOUNT` (docs/connect.md)"}
	}
	key := sha256.Sum256([]byte(token))
	now := a.now()
	a.mu.Lock()
	v, ok := a.cache[key]
	a.mu.Unlock()
	if ok && now.Before(v.expires) {
		return v
	}
	v = a.review(ctx, token)
	if v.code == grpcUnavailable {
		return v
	}
	v.expires = now.Add(connectReviewTTL)
	a.remember(key, v, now)
	fields := logrus.Fields{"user": v.user, "code": grpcCodeNames[v.code]}
	if v.code == grpcOK {
		a.log.WithFields(fields).Info("Spark Connect client admitted")
	} else {
		a.log.WithFields(fields).WithField("reason", v.message).Info("Spark Connect client refused")
	}
	return v
}

// remember caches v, dropping the expired verdicts when the cache is full,
// and all of them if none has expired.
func (a *connectAuth) remember(key [sha256.Size]byte, v verdict, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.cache) >= connectReviewCache {
		for k, old := range a.cache {
			if !now.Before(old.expires) {
				delete(a.cache, k)
			}
		}
		if len(a.cache) >= connectReviewCache {
			clear(a.cache)
		}
	}
	a.cache[key] = v
}

// review asks the API server who the token is and whether it may connect.
func (a *connectAuth) review(ctx context.Context, token string) verdict {
	tr, err := a.client.TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return verdict{code: grpcUnavailable, message: fmt.Sprintf("the sidecar could not review the token with the Kubernetes API (%v); retry", err)}
	}
	if !tr.Status.Authenticated {
		why := tr.Status.Error
		if why == "" {
			why = "not authenticated"
		}
		return verdict{code: grpcUnauthenticated, message: fmt.Sprintf("the Kubernetes API did not accept the token (%s): "+
			"use a current token, such as one from `kubectl create token SERVICEACCOUNT` (docs/connect.md)", why)}
	}
	u := tr.Status.User
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	attrs := &authorizationv1.ResourceAttributes{Namespace: a.namespace, Verb: a.access.Verb, Group: a.access.Group, Resource: a.access.Resource}
	sar, err := a.client.SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		ResourceAttributes: attrs, User: u.Username, Groups: u.Groups, UID: u.UID, Extra: extra}}, metav1.CreateOptions{})
	if err != nil {
		return verdict{user: u.Username, code: grpcUnavailable,
			message: fmt.Sprintf("the sidecar could not ask the Kubernetes API whether %s may connect (%v); retry", u.Username, err)}
	}
	if !sar.Status.Allowed {
		msg := fmt.Sprintf("%s may not %s %s in namespace %s, which this Spark Connect server requires: "+
			"ask for a Role with that rule, bound to you (docs/connect.md)", u.Username, a.access.Verb, a.resourceName(), a.namespace)
		if sar.Status.Reason != "" {
			msg += "; the API server says: " + sar.Status.Reason
		}
		return verdict{user: u.Username, code: grpcPermissionDenied, message: msg}
	}
	return verdict{user: u.Username, code: grpcOK}
}

// resourceName is the resource as RBAC names it, such as
// sparkconnect.sparklet.io.
func (a *connectAuth) resourceName() string {
	if a.access.Group == "" {
		return a.access.Resource
	}
	return a.access.Resource + "." + a.access.Group
}
