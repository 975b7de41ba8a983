package fence_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/fence"
)

// A Guard beside the resource admits the writes of the newest term and
// refuses those of an older one. docs/fencing.md shows this Example.
func ExampleGuard_Do() {
	ctx := context.Background()
	files := map[string]string{}
	writeFile := func(ctx context.Context, path, data string) error { files[path] = data; return nil }
	path := "/reports/nightly.csv"
	var guard fence.Guard // beside the resource
	for _, term := range []events.Event{
		{Name: "billing/nightly", Token: 7, Holder: "node-2"}, // the new leader
		{Name: "billing/nightly", Token: 6, Holder: "node-1"}, // the old one, woken from a pause
	} {
		data := "written by " + term.Holder
		err := guard.Do(ctx, term.Name, term.Token, func(ctx context.Context) error {
			return writeFile(ctx, path, data) // runs only under the newest token
		})
		fmt.Println(term.Holder, "refused:", errors.Is(err, backends.ErrNotHeld))
	}
	fmt.Println(files[path])
	// Output:
	// node-2 refused: false
	// node-1 refused: true
	// written by node-2
}
