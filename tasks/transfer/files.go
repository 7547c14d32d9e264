package transfer

import (
	"context"
	"errors"
	"path"
	"strings"

	"github.com/herald-bridge/herald/tasks/bundle"
	"github.com/herald-bridge/herald/tasks/bundle/safezip"
	"github.com/herald-bridge/herald/tasks/opml"
)

// MaxFile is the largest file a person may send to import: the bundle
// limit on an archive, and the OPML reader's.
const MaxFile = 8 << 20

// Importable reports whether a file of this name may be a bundle or an
// OPML file: what people send in chat is looked at before it is fetched.
// A name without an extension is given the benefit of the doubt.
func Importable(name string) bool {
	ext := strings.ToLower(path.Ext(name))
	return ext == "" || ext == ".zip" || ext == ".opml" || ext == ".xml" || ext == ".txt"
}

// Files imports the files people send in chat through a manager.
type Files struct{ M Manager }

// ImportFile decodes data (a bundle or an OPML file) and imports its
// tasks as r's requests; a file it refuses changes nothing.
func (f Files) ImportFile(ctx context.Context, r Request, data []byte) ([]Row, error) {
	list, err := Decode(data)
	if err != nil {
		return nil, err
	}
	return Import(ctx, f.M, r, list)
}

// Refusal says in plain words why a file was not imported (nothing of it
// was): a coded problem, its English message the error text, worded in
// other languages by the conversation's catalogue ("transfer.*").
func Refusal(err error) error {
	switch {
	case errors.Is(err, safezip.ErrRefused):
		_, why, _ := strings.Cut(err.Error(), ": ")
		return problem{"archive_refused", []any{why}, "I refused that archive: " + why + ". Nothing was imported."}
	case errors.Is(err, bundle.ErrNewerFormat):
		return problem{"newer_bundle", nil, "That bundle comes from a newer herald than this one; nothing was imported."}
	case errors.Is(err, safezip.ErrMalformed), errors.Is(err, bundle.ErrInvalid), errors.Is(err, opml.ErrInvalid):
		return problem{"not_importable", nil, "That is neither a herald bundle (.zip) nor an OPML feed list (.opml); nothing was imported."}
	}
	return problem{"import_failed", nil, "I could not import that file; nothing was imported."}
}
