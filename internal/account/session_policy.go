package account

import "time"

// Default session policies: an owner stays signed in through a working
// week of occasional visits, an operator's console session (which holds
// the admin token's power) ends soon after the operator walks away.
var (
	DefaultOwnerSessions    = SessionPolicy{Idle: 12 * time.Hour, Max: 7 * 24 * time.Hour}
	DefaultOperatorSessions = SessionPolicy{Idle: 30 * time.Minute, Max: 12 * time.Hour}
)

// Or fills p's zero fields from d.
func (p SessionPolicy) Or(d SessionPolicy) SessionPolicy {
	if p.Idle <= 0 {
		p.Idle = d.Idle
	}
	if p.Max <= 0 {
		p.Max = d.Max
	}
	return p
}
