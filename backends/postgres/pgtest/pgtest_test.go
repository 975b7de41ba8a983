package pgtest_test

import (
	"testing"

	"github.com/hustings/hustings/backends/postgres/pgtest"
)

func TestStartRestart(t *testing.T) {
	s := pgtest.Start(t)
	p := pgtest.Pool(t, s.DSN())
	var n int
	if err := p.QueryRow(t.Context(), "SELECT 1").Scan(&n); err != nil || n != 1 {
		t.Fatalf("SELECT 1 = %d, %v", n, err)
	}
	if _, err := p.Exec(t.Context(), "CREATE TABLE kept (x int); INSERT INTO kept VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	var x int
	for range 3 { // the pool's old connections fail once
		if err := p.QueryRow(t.Context(), "SELECT x FROM kept").Scan(&x); err == nil {
			break
		}
	}
	if x != 7 {
		t.Fatalf("after Restart: x = %d, want 7", x)
	}
}
