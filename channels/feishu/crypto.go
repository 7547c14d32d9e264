package feishu

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Verification errors. The event handler answers all of them with 401
// (except ErrUndecryptable: 400) and processes nothing.
var (
	// ErrBadSignature: X-Lark-Signature is missing or does not match.
	ErrBadSignature = errors.New("feishu: bad event signature")
	// ErrStale: X-Lark-Request-Timestamp is missing, malformed or outside
	// the tolerance.
	ErrStale = errors.New("feishu: event timestamp outside tolerance")
	// ErrBadToken: the verification token inside the event does not match.
	ErrBadToken = errors.New("feishu: bad verification token")
	// ErrUndecryptable: the encrypted body cannot be decrypted.
	ErrUndecryptable = errors.New("feishu: undecryptable event")
)

// SignatureTolerance is how far X-Lark-Request-Timestamp may be from now,
// either way.
const SignatureTolerance = 5 * time.Minute

// Signature computes X-Lark-Signature: hex(SHA256(timestamp + nonce +
// encryptKey + body)), body being the exact bytes received.
func Signature(timestamp, nonce, encryptKey string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(timestamp))
	h.Write([]byte(nonce))
	h.Write([]byte(encryptKey))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// verifySignature checks sig in constant time and the timestamp's
// freshness against now.
func verifySignature(timestamp, nonce, sig, encryptKey string, body []byte, now time.Time) error {
	want := Signature(timestamp, nonce, encryptKey, body)
	if sig == "" || subtle.ConstantTimeCompare([]byte(want), []byte(sig)) != 1 {
		return ErrBadSignature
	}
	sec, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return ErrStale
	}
	if d := now.Sub(time.Unix(sec, 0)); d > SignatureTolerance || d < -SignatureTolerance {
		return ErrStale
	}
	return nil
}

// Decrypt opens an encrypted event: base64 of IV (16 bytes) followed by the
// AES-256-CBC ciphertext under SHA256(encryptKey), PKCS#7 padded.
func Decrypt(encrypted, encryptKey string) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(encrypted)
	if err != nil {
		return nil, fmt.Errorf("%w: base64: %w", ErrUndecryptable, err)
	}
	if len(raw) < 2*aes.BlockSize || len(raw)%aes.BlockSize != 0 {
		return nil, fmt.Errorf("%w: %d bytes is not IV plus whole blocks", ErrUndecryptable, len(raw))
	}
	key := sha256.Sum256([]byte(encryptKey))
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUndecryptable, err)
	}
	iv, ct := raw[:aes.BlockSize], raw[aes.BlockSize:]
	plain := make([]byte, len(ct))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(plain, ct)
	n := int(plain[len(plain)-1])
	if n == 0 || n > aes.BlockSize || !bytes.Equal(plain[len(plain)-n:], bytes.Repeat([]byte{byte(n)}, n)) {
		return nil, fmt.Errorf("%w: bad padding", ErrUndecryptable)
	}
	return plain[:len(plain)-n], nil
}

// Encrypt is the inverse of Decrypt with the given IV (16 bytes). Feishu
// encrypts; herald uses it to build test events and for symmetry.
func Encrypt(plain []byte, encryptKey string, iv []byte) (string, error) {
	if len(iv) != aes.BlockSize {
		return "", fmt.Errorf("feishu: iv must be %d bytes", aes.BlockSize)
	}
	key := sha256.Sum256([]byte(encryptKey))
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return "", err
	}
	n := aes.BlockSize - len(plain)%aes.BlockSize
	padded := append(append([]byte{}, plain...), bytes.Repeat([]byte{byte(n)}, n)...)
	out := make([]byte, aes.BlockSize+len(padded))
	copy(out, iv)
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(out[aes.BlockSize:], padded)
	return base64.StdEncoding.EncodeToString(out), nil
}
