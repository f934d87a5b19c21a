package upstream

import "time"

// SetSlowStartNotice shortens the wait before a slow start is remarked, for
// one test; the returned function restores it.
func SetSlowStartNotice(d time.Duration) (restore func()) {
	old := slowStartNotice
	slowStartNotice = d
	return func() { slowStartNotice = old }
}
