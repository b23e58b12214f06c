package redis

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"

	"github.com/kcache/kcache"
)

// Redis key names. The hash tag (the digest in braces) puts a key's value
// and lease in the same Cluster slot, so one script can read both. The
// prefix carries the format version, so a new format never reads an old
// one's values; a change to the value format or its flags needs a new
// prefix, since a reader removes what it cannot verify (see discard).
//
// A store with a secret adds a fleet name derived from the secret, so that
// fleets with different secrets, and unsigned clients, never share a name:
// no client can then take another fleet's name with a value that fleet
// rejects, whether by mistake (a node without the secret) or on purpose,
// short of writing to Redis by hand. And since a value under a fleet's
// names can only come from a client holding the fleet's secret, a value
// there that fails a check is damage or a forgery, never a value of
// another fleet, and a reader may remove it.
const keyPrefix = "kcache:v1:"

// names makes the Redis key names of one store: the prefix they share.
type names string

// namesFor returns the names of a store signing with secret, or of an
// unsigned one for a nil secret. Eight bytes of an HMAC name the fleet:
// enough that two secrets do not meet by chance, and nothing about the
// secret can be learnt from them.
func namesFor(secret []byte) names {
	if secret == nil {
		return keyPrefix
	}
	h := hmac.New(sha256.New, secret)
	h.Write([]byte("kcache redis key names"))
	return names(keyPrefix + "f" + hex.EncodeToString(h.Sum(nil)[:8]) + ":")
}

func (n names) value(d kcache.Digest) string { return string(n) + "{" + d.String() + "}:v" }
func (n names) lease(d kcache.Digest) string { return string(n) + "{" + d.String() + "}:lease" }
