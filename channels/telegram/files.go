package telegram

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/go-telegram/bot"
)

// download fetches a document a person sent: getFile names its path,
// then the Bot API's file endpoint serves it. It reads at most max bytes
// and fails on more. Errors never carry the token, which the file URL
// holds.
func (c *Channel) download(ctx context.Context, fileID string, max int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	f, err := c.bot.GetFile(ctx, &bot.GetFileParams{FileID: fileID})
	if err != nil {
		return nil, c.wrap("getFile", err)
	}
	if f.FileSize > max {
		return nil, fmt.Errorf("telegram: the file is larger than %d bytes", max)
	}
	if f.FilePath == "" {
		return nil, errors.New("telegram: getFile gave no file path")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.bot.FileDownloadLink(f), nil)
	if err != nil {
		return nil, errors.New("telegram: bad file path")
	}
	resp, err := c.o.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("telegram: download a file: %s", c.scrub(err.Error()))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("telegram: download a file: HTTP %d", resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("telegram: download a file: %s", c.scrub(err.Error()))
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("telegram: the file is larger than %d bytes", max)
	}
	return data, nil
}
