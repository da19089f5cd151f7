// Package s3blobs stores claim-check blobs (claimcheck.Blobs) in an S3
// bucket under a key prefix: s3blobs.New(client, bucket, prefix). A missing
// object reads as claimcheck.ErrBlobNotFound; deleting one is success.
package s3blobs
