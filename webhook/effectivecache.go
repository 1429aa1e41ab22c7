package webhook

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/sparklet/sparklet/policy"
)

// maxCachedNamespaces bounds effectiveCache; past it, the cache starts
// afresh.
const maxCachedNamespaces = 4096

// effectiveCache keeps, for the policy in force, each namespace's
// effective policy and its encoding for the sidecar, so that an admission
// neither merges the policy nor encodes it. A reloaded policy is a new
// *policy.Policy, and the cache starts afresh for it. Patches only read the
// effective policy, so admissions share it.
type effectiveCache struct {
	mu     sync.Mutex
	policy *policy.Policy
	byNS   map[string]effective
}

type effective struct {
	policy *policy.Effective
	json   []byte
}

// get returns namespace's effective policy under p and its JSON.
func (c *effectiveCache) get(p *policy.Policy, namespace string) (*policy.Effective, []byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.policy != p || len(c.byNS) >= maxCachedNamespaces {
		c.policy, c.byNS = p, map[string]effective{}
	}
	if e, ok := c.byNS[namespace]; ok {
		return e.policy, e.json, nil
	}
	e := p.For(namespace)
	data, err := json.Marshal(e)
	if err != nil {
		return nil, nil, fmt.Errorf("encode policy for the sidecar: %w", err)
	}
	c.byNS[namespace] = effective{policy: e, json: data}
	return e, data, nil
}
