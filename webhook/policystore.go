package webhook

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/sparklet/sparklet/internal/filewatch"
	"github.com/sparklet/sparklet/internal/version"
	"github.com/sparklet/sparklet/policy"
)

// policyStore holds the policy in force. A bad new policy file is logged
// and counted, and the last good policy stays. With no good policy yet,
// the webhook runs but is not ready, and problem says why.
type policyStore struct {
	current atomic.Pointer[policy.Policy]
	problem atomic.Pointer[string]
	metrics *metrics
	log     *logrus.Entry
}

func (s *policyStore) get() *policy.Policy { return s.current.Load() }

// notReady says why no policy is in force ("" once one is).
func (s *policyStore) notReady() string {
	if s.get() != nil {
		return ""
	}
	if p := s.problem.Load(); p != nil {
		return *p
	}
	return "no policy loaded"
}

// watch loads file (or the built-in policy when file is empty) and keeps
// reloading it when it changes.
func (s *policyStore) watch(ctx context.Context, file string, interval time.Duration) error {
	if file == "" {
		s.current.Store(policy.Default(version.Version))
		s.log.Info("using the built-in policy")
		return nil
	}
	return filewatch.Watch(ctx, interval, []string{file}, func(c [][]byte) error {
		p, err := policy.Parse(c[0], version.Version)
		if err != nil {
			s.metrics.policyLoaded(false)
			if s.get() != nil {
				s.log.WithError(err).WithField("file", file).Error("policy rejected; keeping the last good policy")
				return nil
			}
			// Keep running, unready, and keep watching: the fixed file
			// makes the webhook ready without a restart.
			why := fmt.Sprintf("no valid policy: --policy %s: %v", file, err)
			s.problem.Store(&why)
			s.log.WithError(err).WithField("file", file).Error("no valid policy; not ready until the policy file is fixed (sparklet policy validate shows every problem)")
			return nil
		}
		s.current.Store(p)
		s.metrics.policyLoaded(true)
		s.log.WithField("file", file).Info("policy loaded")
		return nil
	})
}
