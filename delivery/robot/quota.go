package robot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
)

// ServiceZone is the zone whose midnight starts a daily quota's day for
// the services herald meters by the day (PushPlus, ServerChan): China
// Standard Time, which has no daylight saving.
var ServiceZone = time.FixedZone("UTC+8", 8*60*60)

// NextDay is how long from now until the service's next day has begun,
// with a minute's margin for clocks that differ.
func NextDay(now time.Time) time.Duration {
	t := now.In(ServiceZone)
	midnight := time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, ServiceZone)
	return midnight.Sub(now) + time.Minute
}

// DailyQuota counts the sends of one account per service day in the store,
// shared by every replica on it: limit sends a day, then none until the
// next day. Each day has a bucket of its own, named by a hash of the
// token (never the token) and the date; it never refills within the day.
type DailyQuota struct {
	buckets store.Buckets
	name    string
	limit   int
}

// NewDailyQuota is the quota of the account secret names (its token or
// key), limit sends a day; limit ≤ 0: none.
func NewDailyQuota(b store.Buckets, kind delivery.AddressKind, secret string, limit int) *DailyQuota {
	sum := sha256.Sum256([]byte(secret))
	return &DailyQuota{buckets: b, name: string(kind) + ":day:" + hex.EncodeToString(sum[:16]), limit: limit}
}

// Take counts one send at now. When it returns false, nothing was sent
// and out says when to try again.
func (q *DailyQuota) Take(ctx context.Context, now time.Time) (out delivery.Outcome, ok bool) {
	if q == nil || q.buckets == nil || q.limit <= 0 {
		return delivery.Outcome{}, true
	}
	day := now.In(ServiceZone).Format("20060102")
	wait, err := q.buckets.Take(ctx, q.name+":"+day, 48*time.Hour, q.limit, now)
	switch {
	case err != nil:
		return delivery.Outcome{Result: delivery.RetryAfter, After: delivery.NotSentWait, Reason: "store_unavailable"}, false
	case wait > 0:
		return delivery.Outcome{Result: delivery.RetryAfter, After: NextDay(now), Reason: "daily_quota"}, false
	}
	return delivery.Outcome{}, true
}
