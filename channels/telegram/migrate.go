package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/herald-bridge/herald/store"
)

// When a group is upgraded to a supergroup, Telegram refuses every send to
// the old chat id with 400 and parameters.migrate_to_chat_id, and posts a
// service message in each chat naming the other one. Conversation state,
// pending approvals and recipients still carry the old address, so the
// channel remembers old -> new in the channel store and sends replies
// straight to the supergroup from then on. The mapping is a fact about the
// chat, not about this bot, and it never changes back: it is kept without
// expiry and cached in memory once seen.

// migrations caches the old -> new chat ids this channel has seen. Only
// known migrations are cached: a chat not in the map is looked up in the
// store, so a mapping recorded by another replica is found.
type migrations struct {
	mu sync.Mutex
	m  map[int64]int64
}

func (m *migrations) get(old int64) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	to, ok := m.m[old]
	return to, ok
}

func (m *migrations) put(old, to int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[int64]int64{}
	}
	m.m[old] = to
}

// savedMigration is the stored mapping of one old group id.
type savedMigration struct {
	To int64     `json:"to"`
	At time.Time `json:"at"`
}

func migrationKey(old int64) string {
	return "telegram/migrated/" + strconv.FormatInt(old, 10)
}

// resolve returns the chat a reply to chat goes to: the supergroup the
// group became, or chat itself. A store failure is logged and resolves to
// chat: Telegram then answers with the migration, which send follows.
func (c *Channel) resolve(ctx context.Context, chat int64) int64 {
	if to, ok := c.migrated.get(chat); ok {
		return to
	}
	raw, err := c.o.Store.Channels().Get(ctx, migrationKey(chat))
	if errors.Is(err, store.ErrNotFound) {
		return chat
	}
	if err != nil {
		c.log.Warn().Str("error", err.Error()).Msg("telegram chat migration lookup failed")
		return chat
	}
	var s savedMigration
	if err := json.Unmarshal(raw, &s); err != nil || s.To == 0 || s.To == chat {
		c.log.Warn().Msg("telegram chat migration record unreadable; ignored")
		return chat
	}
	c.migrated.put(chat, s.To)
	return s.To
}

// remember records that group old became supergroup to, durably and in
// the cache. The cache is updated even when the write fails, so this
// process keeps sending to the right chat.
func (c *Channel) remember(ctx context.Context, old, to int64) error {
	if old == 0 || to == 0 || old == to {
		return nil
	}
	c.migrated.put(old, to)
	raw, err := json.Marshal(savedMigration{To: to, At: time.Now().UTC()})
	if err != nil {
		return err
	}
	if err := c.o.Store.Channels().Put(ctx, migrationKey(old), raw, 0); err != nil {
		return fmt.Errorf("telegram: chat migration: %w", err)
	}
	// Ids stay out of the log: they address a recipient (I10).
	c.log.Info().Msg("telegram group moved to a supergroup; replies follow it")
	return nil
}

// migration reports the old and new ids a service message announces:
// migrate_to_chat_id is posted in the old group, migrate_from_chat_id in
// the new supergroup.
func migration(m *models.Message) (old, to int64, ok bool) {
	switch {
	case m == nil:
		return 0, 0, false
	case m.MigrateToChatID != 0:
		return m.Chat.ID, m.MigrateToChatID, true
	case m.MigrateFromChatID != 0:
		return m.MigrateFromChatID, m.Chat.ID, true
	}
	return 0, 0, false
}
