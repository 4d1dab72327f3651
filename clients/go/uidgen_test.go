package uidgen

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

func newClient(t *testing.T, servers []string, opts ...Option) *Client {
	t.Helper()
	c, err := New(servers, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func take(t *testing.T, c *Client, tag string, n int) []uint64 {
	t.Helper()
	ids := make([]uint64, n)
	for i := range ids {
		id, err := c.NextID(context.Background(), tag)
		if err != nil {
			t.Fatalf("take %d: %v", i, err)
		}
		ids[i] = id
	}
	return ids
}

func TestIDsIncreaseAndAreDistinctAcross16Goroutines(t *testing.T) {
	f := newFake(t, newStore(1))
	c := newClient(t, []string{f.URL}, WithMinCount(100), WithMaxCount(1000))
	const goroutines, each = 16, 5000
	got := make([][]uint64, goroutines)
	errs := make([]error, goroutines)
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			ctx := context.Background()
			for len(got[g]) < each {
				if g%2 == 1 { // half take batches, which may span ranges
					ids, err := c.NextIDs(ctx, "order", 7)
					if err != nil {
						errs[g] = err
						return
					}
					got[g] = append(got[g], ids...)
					continue
				}
				id, err := c.NextID(ctx, "order")
				if err != nil {
					errs[g] = err
					return
				}
				got[g] = append(got[g], id)
			}
		}(g)
	}
	wg.Wait()
	ranges, _, _, _ := f.snapshot()
	inRange := func(id uint64) bool {
		for _, r := range ranges {
			if id >= r.first && id <= r.last {
				return true
			}
		}
		return false
	}
	seen := map[uint64]bool{}
	for g, ids := range got {
		if errs[g] != nil {
			t.Fatalf("goroutine %d: %v", g, errs[g])
		}
		for i, id := range ids {
			if i > 0 && id <= ids[i-1] {
				t.Fatalf("goroutine %d: %d after %d", g, id, ids[i-1])
			}
			if seen[id] {
				t.Fatalf("ID %d handed out twice", id)
			}
			if !inRange(id) {
				t.Fatalf("ID %d is in no range the server handed out", id)
			}
			seen[id] = true
		}
	}
	if len(ranges) < 2 {
		t.Fatalf("only %d ranges fetched", len(ranges))
	}
}

func TestNextRangeIsFetchedEarlyAndUsedOnlyAfterTheCurrent(t *testing.T) {
	f := newFake(t, newStore(1))
	c := newClient(t, []string{f.URL}, WithMinCount(100))
	ids := take(t, c, "order", 50)
	time.Sleep(50 * time.Millisecond)
	if r, _, _, _ := f.snapshot(); len(r) != 1 {
		t.Fatalf("%d ranges fetched before half of the first was used", len(r))
	}
	ids = append(ids, take(t, c, "order", 1)...) // the 51st: prefetch_share reached
	f.waitRanges(t, 2)
	ids = append(ids, take(t, c, "order", 49)...)
	for i, id := range ids {
		if id != uint64(i+1) {
			t.Fatalf("ID %d is %d: the next range was used before the current ran out", i, id)
		}
	}
	ranges, _, _, _ := f.snapshot()
	if len(ranges) != 2 {
		t.Fatalf("%d ranges fetched, want 2", len(ranges))
	}
	if id := take(t, c, "order", 1)[0]; id != ranges[1].first {
		t.Fatalf("after the first range came %d, want the next range's first %d", id, ranges[1].first)
	}
}

func TestRangeSizeDoublesAtAHighRateAndHalvesAtALowOne(t *testing.T) {
	f := newFake(t, newStore(1))
	clk := newClock()
	c := newClient(t, []string{f.URL}, WithMinCount(10), WithMaxCount(80), withClock(clk.now))
	take(t, c, "order", 10) // range 1 (10); range 2 (10) prefetched
	f.waitRanges(t, 2)
	clk.add(time.Second) // range 1 lasted 1 s < 10 s: double
	take(t, c, "order", 10)
	f.waitRanges(t, 3) // range 3 asked at 20
	clk.add(time.Second)
	take(t, c, "order", 20)
	f.waitRanges(t, 4)        // range 4 asked at 40
	clk.add(25 * time.Second) // range 3 lasted 25 s > 20 s: halve
	take(t, c, "order", 21)
	f.waitRanges(t, 5)
	_, counts, _, _ := f.snapshot()
	want := []uint64{10, 10, 20, 40, 20}
	if len(counts) != len(want) {
		t.Fatalf("counts asked %v, want %v", counts, want)
	}
	for i := range want {
		if counts[i] != want[i] {
			t.Fatalf("counts asked %v, want %v", counts, want)
		}
	}
}

func TestSnowflakeIDsOlderThanValidityAreDropped(t *testing.T) {
	f := newFake(t, newStore(1000))
	clk := newClock()
	c := newClient(t, []string{f.URL}, WithSnowflakeBatch(5), WithValidity(time.Second), withClock(clk.now))
	ctx := context.Background()
	var got []uint64
	for i := 0; i < 2; i++ {
		id, err := c.Snowflake(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, id)
	}
	clk.add(500 * time.Millisecond)
	id, err := c.Snowflake(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, id)
	clk.add(600 * time.Millisecond) // the batch is 1.1 s old now
	id, err = c.Snowflake(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, id)
	want := []uint64{1000, 1001, 1002, 1005} // 1003 and 1004 were too old
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("snowflake IDs %v, want %v", got, want)
		}
	}
	f.mu.Lock()
	calls := f.flakeCalls
	f.mu.Unlock()
	if calls != 2 {
		t.Fatalf("%d snowflake batches fetched, want 2", calls)
	}
}

func TestFailoverPastARefusedPort(t *testing.T) {
	f := newFake(t, newStore(1))
	c := newClient(t, []string{refusedAddr(t), f.URL}, withStart(0), WithMinCount(10))
	if id := take(t, c, "order", 1)[0]; id != 1 {
		t.Fatalf("got %d", id)
	}
	if n := c.Failovers(); n != 1 {
		t.Fatalf("%d failovers, want 1", n)
	}
	if _, err := c.Snowflake(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := c.Failovers(); n != 1 {
		t.Fatalf("%d failovers after a call to the server that answered, want 1", n)
	}
}

func TestFailoverPastA500AndAHangingServer(t *testing.T) {
	store := newStore(1)
	bad, hung, good := newFake(t, store), newFake(t, store), newFake(t, store)
	bad.fail(500, "store down", "")
	hung.setHang(true)
	const timeout = 300 * time.Millisecond
	c := newClient(t, []string{bad.URL, hung.URL, good.URL}, withStart(0), WithTimeout(timeout))
	began := time.Now()
	id, err := c.NextID(context.Background(), "order")
	took := time.Since(began)
	if err != nil || id != 1 {
		t.Fatalf("got %d, %v", id, err)
	}
	if n := c.Failovers(); n != 2 {
		t.Fatalf("%d failovers, want 2", n)
	}
	// The hang is waited for its timeout, no longer: 300 ms + pauses of 50 and 100 ms.
	if took < timeout || took > timeout+150*time.Millisecond+time.Second {
		t.Fatalf("the call took %v", took)
	}
	for _, f := range []*fake{bad, hung} {
		if _, _, _, hits := f.snapshot(); hits != 1 {
			t.Fatalf("%s was asked %d times, want 1", f.URL, hits)
		}
	}
}

func TestAWaitEndsWithTheCallersContext(t *testing.T) {
	hung := newFake(t, newStore(1))
	hung.setHang(true)
	c := newClient(t, []string{hung.URL}, WithTimeout(5*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err := c.NextID(ctx, "order")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the context's deadline", err)
	}
	if took := time.Since(began); took > time.Second {
		t.Fatalf("the wait took %v", took)
	}
}

func TestRefusalsAreReturnedAtOnce(t *testing.T) {
	store := newStore(1)
	a, b := newFake(t, store), newFake(t, store)
	c := newClient(t, []string{a.URL, b.URL}, withStart(0))
	_, err := c.NextID(context.Background(), "missing")
	var refused *RefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("got %v, want a RefusedError", err)
	}
	if refused.Status != 404 || refused.Message != `no tag "missing"` || refused.Server != a.URL {
		t.Fatalf("got %+v", refused)
	}
	if !strings.Contains(err.Error(), `no tag "missing"`) {
		t.Fatalf("the message %q lacks the service's text", err)
	}

	a.fail(401, "no token, or an unknown one", "")
	_, err = c.Snowflake(context.Background())
	if !errors.As(err, &refused) || refused.Status != 401 || refused.Message != "no token, or an unknown one" {
		t.Fatalf("got %v", err)
	}
	a.fail(400, "count too large", "100000")
	_, err = c.NextID(context.Background(), "order")
	if !errors.As(err, &refused) || refused.Limit != "100000" || !strings.Contains(err.Error(), "100000") {
		t.Fatalf("got %v", err)
	}
	if _, _, _, hits := b.snapshot(); hits != 0 {
		t.Fatalf("a refusal was retried at the other server (%d requests)", hits)
	}
	if n := c.Failovers(); n != 0 {
		t.Fatalf("%d failovers on refusals", n)
	}
}

func TestEveryServerDownNamesEach(t *testing.T) {
	store := newStore(1)
	down := refusedAddr(t)
	busy, hung := newFake(t, store), newFake(t, store)
	busy.fail(503, "the store does not answer", "")
	hung.setHang(true)
	c := newClient(t, []string{down, busy.URL, hung.URL}, withStart(0), WithTimeout(200*time.Millisecond))
	_, err := c.NextID(context.Background(), "order")
	var unavailable *UnavailableError
	if !errors.As(err, &unavailable) || len(unavailable.Attempts) != 3 {
		t.Fatalf("got %v, want an UnavailableError of 3 attempts", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"http://" + down, "refused",
		busy.URL + ": HTTP 503: the store does not answer",
		hung.URL + ": no answer within 200ms",
	} {
		if !strings.Contains(msg, want) {
			t.Fatalf("%q lacks %q", msg, want)
		}
	}
}

func TestTheTokenIsSent(t *testing.T) {
	f := newFake(t, newStore(1))
	c := newClient(t, []string{f.URL}, WithToken("k3y-for-orders-0123456789"))
	take(t, c, "order", 1)
	if _, err := c.Snowflake(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	auths := append([]string(nil), f.auths...)
	f.mu.Unlock()
	if len(auths) < 2 {
		t.Fatalf("%d requests", len(auths))
	}
	for _, a := range auths {
		if a != "Bearer k3y-for-orders-0123456789" {
			t.Fatalf("Authorization %q", a)
		}
	}
}

func TestCloseGivesBackToTheServerThatHandedOut(t *testing.T) {
	store := newStore(1)
	a, b := newFake(t, store), newFake(t, store)
	c, err := New([]string{a.URL, b.URL}, withStart(0), WithMinCount(10))
	if err != nil {
		t.Fatal(err)
	}
	take(t, c, "order", 5) // range 1 from a
	a.fail(503, "draining", "")
	take(t, c, "order", 2) // the 6th starts the prefetch, which moves to b
	b.waitRanges(t, 1)
	a.fail(0, "", "")
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	ra, _, ga, _ := a.snapshot()
	rb, _, gb, _ := b.snapshot()
	// The current range came from a, the next from b: only the next goes back (a's
	// tail after b's range would sit below what b handed out last).
	_ = ra
	if len(ga) != 0 {
		t.Fatalf("a got give-backs %+v, want none", ga)
	}
	if len(gb) != 1 || gb[0] != (fakeGiveback{"order", rb[0].first, rb[0].receipt}) {
		t.Fatalf("b got give-backs %+v, want the whole of %+v", gb, rb[0])
	}
	store.mu.Lock()
	events := strings.Join(store.events, ", ")
	store.mu.Unlock()
	if !strings.HasSuffix(events, "giveback "+rb[0].receipt) {
		t.Fatalf("events %s: the next range goes back last", events)
	}
	if _, err := c.NextID(context.Background(), "order"); !errors.Is(err, ErrClosed) {
		t.Fatalf("a take after Close: %v", err)
	}
	if _, err := c.Snowflake(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("a snowflake after Close: %v", err)
	}
}

func TestCloseGivesBackOnlyTheNextRangeWhenTheCurrentIsUsedUp(t *testing.T) {
	f := newFake(t, newStore(1))
	c, err := New([]string{f.URL}, WithMinCount(10), WithPrefetchShare(1))
	if err != nil {
		t.Fatal(err)
	}
	take(t, c, "order", 10)
	f.waitRanges(t, 2) // share 1: prefetched at the last ID
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	ranges, _, gbs, _ := f.snapshot()
	if len(gbs) != 1 || gbs[0].first != ranges[1].first || gbs[0].receipt != ranges[1].receipt {
		t.Fatalf("give-backs %+v", gbs)
	}
}

func TestIDsAbove2To53AreExact(t *testing.T) {
	const first = 1<<53 + 1 // not a float64
	for _, numbersOnly := range []bool{false, true} {
		f := newFake(t, newStore(first))
		f.numbersOnly = numbersOnly
		c := newClient(t, []string{f.URL}, WithMinCount(3), WithSnowflakeBatch(3))
		ids := take(t, c, "order", 4)
		for i, id := range ids {
			if id != first+uint64(i) {
				t.Fatalf("numbers only %v: ID %d is %d, want %d", numbersOnly, i, id, first+uint64(i))
			}
		}
		id, err := c.Snowflake(context.Background())
		if err != nil || id != first {
			t.Fatalf("numbers only %v: snowflake %d, %v", numbersOnly, id, err)
		}
	}
	big := uint64(1<<64 - 10)
	f := newFake(t, newStore(big))
	c := newClient(t, []string{f.URL}, WithMinCount(5))
	ids := take(t, c, "order", 3)
	if ids[2] != big+2 {
		t.Fatalf("got %v", ids)
	}
}

func TestNextIDsSpansRanges(t *testing.T) {
	f := newFake(t, newStore(1))
	c := newClient(t, []string{f.URL}, WithMinCount(10))
	ids, err := c.NextIDs(context.Background(), "order", 25)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 25 || !sort.SliceIsSorted(ids, func(i, j int) bool { return ids[i] < ids[j] }) {
		t.Fatalf("got %v", ids)
	}
	for i, id := range ids {
		if id != uint64(i+1) {
			t.Fatalf("got %v", ids)
		}
	}
}

func TestNewChecksItsArguments(t *testing.T) {
	for _, tc := range []struct {
		servers []string
		opts    []Option
	}{
		{nil, nil},
		{[]string{"ftp://x"}, nil},
		{[]string{"a:1"}, []Option{WithMinCount(10), WithMaxCount(5)}},
		{[]string{"a:1"}, []Option{WithPrefetchShare(0)}},
		{[]string{"a:1"}, []Option{WithTimeout(0)}},
	} {
		if _, err := New(tc.servers, tc.opts...); err == nil {
			t.Fatalf("New(%v) took it", tc.servers)
		}
	}
}
