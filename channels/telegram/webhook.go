package telegram

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/go-telegram/bot/models"
)

// WebhookHandler serves POST WebhookPath. The secret header is compared in
// constant time and a mismatch gets 401 and nothing else. A valid update
// is claimed by update_id, handled, and only then answered 200 with an
// empty body (a body would be executed by Telegram as a method call). When
// the update could not be claimed the answer is 503, so Telegram offers it
// again.
func (c *Channel) WebhookHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		if !c.secretOK(r.Header.Get("X-Telegram-Bot-Api-Secret-Token")) {
			c.log.Debug().Msg("telegram webhook: wrong secret")
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				w.WriteHeader(http.StatusRequestEntityTooLarge)
				return
			}
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		var u models.Update
		if err := json.Unmarshal(body, &u); err != nil {
			c.log.Debug().Msg("telegram webhook: bad update body")
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		me, err := c.identity(r.Context())
		if err != nil {
			c.log.Warn().Str("error", err.Error()).Msg("telegram webhook: bot identity unknown")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if err := c.process(r.Context(), &u, me); err != nil {
			c.log.Warn().Str("error", err.Error()).Msg("telegram webhook: update not claimed")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}
