package kubernetes

import (
	"context"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// List returns the names of the locks held now that start with prefix,
// sorted: one LIST of the Backend's lock Leases, and a GET of each
// holder's session Lease that the Backend's watch did not deliver within
// its TTL (as Holder judges it, a session found expired is deleted).
func (b *Backend) List(ctx context.Context, prefix string) ([]string, error) {
	if err := ctxErr(ctx, "list"); err != nil {
		return nil, err
	}
	start := time.Now()
	sel := labels.SelectorFromSet(map[string]string{labelPrefix: b.prefix, labelKind: kindLock}).String()
	list, err := b.leases.List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, translate(ctx, "list", err)
	}
	var names []string
	for i := range list.Items {
		t := termOf(&list.Items[i])
		if t.name == "" || !strings.HasPrefix(t.name, prefix) || list.Items[i].Name != b.LockLease(t.name) {
			continue
		}
		live, err := b.live(ctx, t, start, nil)
		if err != nil {
			return nil, err
		}
		if live {
			names = append(names, t.name)
		}
	}
	slices.Sort(names)
	return names, nil
}
