package nats

import "strings"

// keyOf turns a name (any UTF-8, at most 256 bytes) into a valid KV key
// token, readable where the name is plain: letters, digits, '-' and '_'
// stay, every other byte is =XX (hex), since a key allows only
// [-/_=.A-Za-z0-9] and '.' separates tokens.
func keyOf(name string) string {
	plain := func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
	}
	var b strings.Builder
	b.Grow(len(name))
	for i := range len(name) {
		if c := name[i]; plain(c) {
			b.WriteByte(c)
		} else {
			const hex = "0123456789ABCDEF"
			b.WriteByte('=')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

// LockKey returns the key of the lock name's record in the bucket, for
// operators and tools: `nats kv get <bucket> <key>` shows its holder, and
// deleting it takes the lock from its holder (who is told).
func LockKey(name string) string { return lockPrefix + keyOf(name) }
