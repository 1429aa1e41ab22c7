package sidecar

import "sync"

// maxUserLabels bounds the user label of the Spark Connect metrics: the
// first users the sidecar labels keep their names, later ones are counted
// as "other", so that a server many users reach keeps a bounded number of
// series. Only users the API server authenticated get a label at all.
const maxUserLabels = 100

// userLabels hands out the user label values of one sidecar.
type userLabels struct {
	mu    sync.Mutex
	known map[string]bool
}

func newUserLabels() *userLabels { return &userLabels{known: map[string]bool{}} }

// label is user's label value: its name while fewer than maxUserLabels
// users have one, else "other". An empty user (no token, or one the API
// server did not accept) stays empty.
func (u *userLabels) label(user string) string {
	if user == "" {
		return ""
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.known[user] {
		return user
	}
	if len(u.known) >= maxUserLabels {
		return "other"
	}
	u.known[user] = true
	return user
}
