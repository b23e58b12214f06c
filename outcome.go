package kcache

import "fmt"

// Outcome says where a result came from. Its String form is a public
// interface: the CLI prints it and scripts match on it.
type Outcome int

// The outcomes, from the most to the least expensive for the caller.
const (
	OutcomeBuilt  Outcome = iota // this process ran the compiler
	OutcomeWaited                // another process built it while this one waited
	OutcomeRemote                // read from the fleet's remote tier
	OutcomeDisk                  // read from the machine's persistent tier
	OutcomeMemory                // a live object of this process
)

var outcomeNames = [...]string{"built", "waited", "remote", "disk", "memory"}

// String returns "built", "waited", "remote", "disk" or "memory".
func (o Outcome) String() string {
	if o < 0 || int(o) >= len(outcomeNames) {
		return fmt.Sprintf("Outcome(%d)", int(o))
	}
	return outcomeNames[o]
}

// MarshalText writes the outcome's name, so JSON carries "disk", not 3.
func (o Outcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }
