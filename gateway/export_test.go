package gateway

import "time"

// SetParkAfter sets how long an idle HTTP/1.1 tunnel waits before it is
// parked, for a test, and returns what puts it back.
func SetParkAfter(d time.Duration) (restore func()) {
	old := parkAfter
	parkAfter = d
	return func() { parkAfter = old }
}
