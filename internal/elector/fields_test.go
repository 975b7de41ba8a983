package elector

import (
	"reflect"
	"testing"
)

// leafFields counts the fields of t, going into the fields of every
// struct of this package that t holds by value, and with pointers into
// those it holds by pointer too, but for the elector, its config and its
// session, which are not the actor's parts. An alarm is one field: a
// timer and what it calls.
func leafFields(t reflect.Type, pointers bool, seen map[reflect.Type]bool) int {
	n := 0
	for f := range t.Fields() {
		ft := f.Type
		if ft.Kind() == reflect.Pointer && pointers {
			ft = ft.Elem()
		}
		part := ft.Kind() == reflect.Struct && ft.PkgPath() == t.PkgPath() && !seen[ft]
		switch ft {
		case reflect.TypeFor[Elector](), reflect.TypeFor[Session](), reflect.TypeFor[Config](), reflect.TypeFor[alarm]():
			part = false
		}
		if !part {
			n++
			continue
		}
		seen[ft] = true
		n += leafFields(ft, pointers, seen)
	}
	return n
}

// maxLeafFields bounds the leaf fields of the actor and the parts it holds
// by value (issue 32's target).
const maxLeafFields = 30

// The actor's state stays small: each fact has one owner. Run with -v to
// see the counts.
func TestActorLeafFields(t *testing.T) {
	typ := reflect.TypeFor[actor]()
	parts := leafFields(typ, false, map[reflect.Type]bool{})
	owned := leafFields(typ, true, map[reflect.Type]bool{})
	t.Logf("actor: %d fields, %d leaf fields in its parts held by value, %d with the parts it points to", typ.NumField(), parts, owned)
	if parts > maxLeafFields {
		t.Errorf("the actor and its parts hold %d leaf fields, over %d: is a fact kept twice?", parts, maxLeafFields)
	}
}
