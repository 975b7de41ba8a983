package elector

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/hustings/hustings/backends"
)

// BackendLabel names a backend for metrics by its package's name: "redis"
// for a *redis.Backend. Labels are kept by type: a run asks for one twice.
func BackendLabel(b backends.Backend) string {
	typ := reflect.TypeOf(b)
	if l, ok := labels.Load(typ); ok {
		return l.(string)
	}
	t := strings.TrimPrefix(fmt.Sprintf("%T", b), "*")
	if i := strings.IndexByte(t, '.'); i > 0 {
		t = t[:i]
	}
	labels.Store(typ, t)
	return t
}

// labels holds BackendLabel's labels by the backend's reflect.Type.
var labels sync.Map
