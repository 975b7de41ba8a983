package redis

import "testing"

// TestSlot checks the hash slot against values the Redis documentation
// gives (CLUSTER KEYSLOT) and its rules for hash tags.
func TestSlot(t *testing.T) {
	tests := []struct {
		key  string
		want uint16
	}{
		{"123456789", 0x31c3 % slots}, // CRC-16/XMODEM's check value
		{"foo", 12182},
		{"somekey", 11058},
		{"foo{hash_tag}", 2515},
		{"hash_tag", 2515},                          // the tag alone counts
		{"foo{}{bar}", crc16("foo{}{bar}") % slots}, // an empty first tag: the whole key
		{"foo{{bar}}zap", crc16("{bar") % slots},    // the tag is "{bar"
		{"foo{bar", crc16("foo{bar") % slots},       // no '}': the whole key
	}
	for _, tt := range tests {
		if got := slot(tt.key); got != tt.want {
			t.Errorf("slot(%q) = %d, want %d", tt.key, got, tt.want)
		}
	}
}
