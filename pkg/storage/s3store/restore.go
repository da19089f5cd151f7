package s3store

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/millfleet/mill/pkg/storage"
)

var _ storage.Restorer = (*Store)(nil)

// ErrNotArchived is returned by RequestRestore for an object that is not in
// an archival storage class: there is nothing to restore.
var ErrNotArchived = errors.New("s3store: object is not archived")

// RequestRestore implements storage.Restorer with RestoreObject (tier ""
// is Bulk; a temporary copy kept days days). A restore already in progress
// (RestoreAlreadyInProgress) or an object already restored (S3 answers 200
// instead of 202, and extends the copy's expiry) is started == false.
func (s *Store) RequestRestore(ctx context.Context, space, id string, days int, tier storage.RestoreTier) (bool, error) {
	key, err := s.contentKey(space, id)
	if err != nil {
		return false, wrap("restore", space+"/"+id, err)
	}
	if days < 1 {
		return false, fmt.Errorf("s3store: restore %s: days %d: must be at least 1", storage.QuoteID(space+"/"+id), days)
	}
	t, err := storage.ParseRestoreTier(string(tier))
	if err != nil {
		return false, fmt.Errorf("s3store: restore %s: %w", storage.QuoteID(space+"/"+id), err)
	}
	info, err := s.head(ctx, key, id)
	if err != nil {
		return false, wrap("restore", space+"/"+id, err)
	}
	if !info.Archived {
		return false, fmt.Errorf("s3store: restore %s (storage class %q): %w", storage.QuoteID(space+"/"+id), info.StorageClass, ErrNotArchived)
	}
	if info.Restore != storage.RestoreNone {
		return false, nil
	}
	req := &types.RestoreRequest{GlacierJobParameters: &types.GlacierJobParameters{Tier: types.Tier(t)}}
	if info.StorageClass != string(types.StorageClassIntelligentTiering) {
		// An Intelligent-Tiering object moves back to its frequent access
		// tier for good: S3 refuses a number of days for it.
		req.Days = aws.Int32(int32(days))
	}
	_, err = s.client.RestoreObject(ctx, &s3.RestoreObjectInput{
		Bucket: aws.String(key.bucket), Key: aws.String(key.key), RestoreRequest: req,
	})
	if errorCode(err) == "RestoreAlreadyInProgress" {
		return false, nil
	}
	if err != nil {
		return false, wrap("restore", space+"/"+id, err)
	}
	return true, nil
}
