package nats

import (
	"strconv"
	"strings"
)

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

// unkey turns a key token made by keyOf back into its name; ok is false
// for a token keyOf does not make.
func unkey(key string) (name string, ok bool) {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		if key[i] != '=' {
			b.WriteByte(key[i])
			continue
		}
		if i+2 >= len(key) {
			return "", false
		}
		n, err := strconv.ParseUint(key[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b.WriteByte(byte(n))
		i += 2
	}
	return b.String(), true
}

// LockKey returns the key of the lock name's record in the bucket, for
// operators and tools: `nats kv get <bucket> <key>` shows its holder, and
// deleting it takes the lock from its holder (who is told).
func LockKey(name string) string { return lockPrefix + keyOf(name) }
