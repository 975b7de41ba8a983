package redis

import (
	"fmt"
	"strings"

	"github.com/hustings/hustings/backends"
)

// HashTag returns the hash tag of the keys of lock name, "{name}" with '%'
// and '}' in name written %25 and %7D. Keys that hold it are in the
// lock's Redis Cluster hash slot, as Fence requires.
func HashTag(name string) string { return "{" + tagEscaper.Replace(name) + "}" }

// slots is the number of hash slots of a Redis Cluster.
const slots = 16384

// slot returns the Cluster hash slot of key: CRC16 of its hash tag, the
// part between the first '{' and the next '}' if that is not empty, else
// of the whole key.
func slot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return crc16(key) % slots
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the one
// Redis Cluster uses.
func crc16(s string) uint16 {
	var crc uint16
	for i := range len(s) {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// sameSlot returns an error matching backends.ErrInvalid, naming the
// hash tag to use, for the first of keys not in the slot of lock, the key
// of lock name.
func sameSlot(name, lock string, keys []string) error {
	want := slot(lock)
	for _, k := range keys {
		if slot(k) != want {
			tag := HashTag(name)
			return fmt.Errorf("%w: redis: key %q is in hash slot %d, not in slot %d of lock %q: name it with the hash tag %s, as in %q",
				backends.ErrInvalid, k, slot(k), want, name, tag, tag+":"+k)
		}
	}
	return nil
}
