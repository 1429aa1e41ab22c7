package patches

import (
	"cmp"
	"slices"
)

// sortedKeys returns the keys of m in order. It sizes the slice once,
// where slices.Sorted(maps.Keys(m)) grows it key by key.
func sortedKeys[M ~map[K]V, K cmp.Ordered, V any](m M) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// sortedWhere returns, in order, the keys of m for which keep holds. A
// loop over them does what a loop over all the sorted keys that skips the
// others does, but sorts only the few it visits: most admissions visit
// none.
func sortedWhere[M ~map[K]V, K cmp.Ordered, V any](m M, keep func(K, V) bool) []K {
	var keys []K
	for k, v := range m {
		if keep(k, v) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
