package uidgen

import (
	"fmt"
	"time"
)

// config holds the options of PROTOCOL.md, with its defaults.
type config struct {
	token          string
	timeout        time.Duration
	retryAfter     time.Duration
	minCount       uint64
	maxCount       uint64
	prefetchShare  float64
	target         time.Duration
	snowflakeBatch uint64
	validity       time.Duration

	// For tests only: a clock to drive the range sizing and the snowflake validity, and
	// a fixed first server instead of a random one.
	now   func() time.Time
	start int
}

func defaults() config {
	return config{
		timeout:        2 * time.Second,
		retryAfter:     5 * time.Second,
		minCount:       1000,
		maxCount:       100000,
		prefetchShare:  0.5,
		target:         10 * time.Second,
		snowflakeBatch: 1000,
		validity:       time.Second,
		now:            time.Now,
		start:          -1,
	}
}

func (c *config) validate() error {
	switch {
	case c.timeout <= 0:
		return fmt.Errorf("uidgen: timeout %v must be positive", c.timeout)
	case c.retryAfter < 0:
		return fmt.Errorf("uidgen: retryAfter %v must not be negative", c.retryAfter)
	case c.minCount < 1:
		return fmt.Errorf("uidgen: minCount must be at least 1")
	case c.maxCount < c.minCount:
		return fmt.Errorf("uidgen: maxCount %d is below minCount %d", c.maxCount, c.minCount)
	case c.maxCount > maxRange:
		return fmt.Errorf("uidgen: maxCount %d is above %d", c.maxCount, uint64(maxRange))
	case !(c.prefetchShare > 0 && c.prefetchShare <= 1):
		return fmt.Errorf("uidgen: prefetchShare %v must be in (0, 1]", c.prefetchShare)
	case c.target <= 0:
		return fmt.Errorf("uidgen: target %v must be positive", c.target)
	case c.snowflakeBatch < 1 || c.snowflakeBatch > maxRange:
		return fmt.Errorf("uidgen: snowflakeBatch %d must be from 1 to %d", c.snowflakeBatch, uint64(maxRange))
	case c.validity <= 0:
		return fmt.Errorf("uidgen: validity %v must be positive", c.validity)
	}
	return nil
}

// An Option changes one setting of New.
type Option func(*config)

// WithToken sends Authorization: Bearer TOKEN with every request.
func WithToken(token string) Option { return func(c *config) { c.token = token } }

// WithTimeout bounds each HTTP call to one server (default 2 s).
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithRetryAfter sets how long a failed server is tried last (default 5 s).
func WithRetryAfter(d time.Duration) Option { return func(c *config) { c.retryAfter = d } }

// WithMinCount sets the smallest range asked for, and the first (default 1,000).
func WithMinCount(n uint64) Option { return func(c *config) { c.minCount = n } }

// WithMaxCount sets the largest range asked for (default 100,000, the service's limit).
func WithMaxCount(n uint64) Option { return func(c *config) { c.maxCount = n } }

// WithPrefetchShare sets the share of the current range handed out before the next one
// is fetched (default 0.5).
func WithPrefetchShare(share float64) Option { return func(c *config) { c.prefetchShare = share } }

// WithTarget sets target_seconds (default 10 s): a range used up faster doubles the next
// request, one lasting over twice as long halves it.
func WithTarget(d time.Duration) Option { return func(c *config) { c.target = d } }

// WithSnowflakeBatch sets the snowflake IDs asked for per request (default 1,000).
func WithSnowflakeBatch(n uint64) Option { return func(c *config) { c.snowflakeBatch = n } }

// WithValidity sets how long after its batch arrived a snowflake ID may still be handed
// out (default 1 s); older ones are dropped.
func WithValidity(d time.Duration) Option { return func(c *config) { c.validity = d } }

// withClock and withStart are for the tests: a clock they move, and a known first server.
func withClock(now func() time.Time) Option { return func(c *config) { c.now = now } }
func withStart(i int) Option                { return func(c *config) { c.start = i } }
