package task_test

import (
	"fmt"
	"time"

	"github.com/millfleet/mill/pkg/task"
)

func Example() {
	dup := task.Dup{Account: "acme", StoreID: "1", DestStoreID: "2", SpaceID: "photos", ContentID: "a=b.jpg"}

	body, err := task.Encode(dup.Task(), task.FormatJSON)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(body))

	t, err := task.Decode(body)
	if err != nil {
		panic(err)
	}
	back, err := task.DupFrom(t)
	fmt.Println(back.ContentID, err)
	// Output:
	// {"v":1,"type":"DUP","attempts":0,"props":{"account":"acme","contentId":"a=b.jpg","destStoreId":"2","spaceId":"photos","storeId":"1"}}
	// a=b.jpg <nil>
}

func ExampleEncodeOptions_Encode() {
	opts := task.EncodeOptions{Now: func() time.Time { return time.Date(2024, 3, 5, 14, 7, 9, 0, time.UTC) }}
	t := task.New(task.TypeBit, map[string]string{"account": "acme", "storeId": "1", "spaceId": "s", "contentId": "dir/Ünï: x"})
	t.Attempts = 1
	body, err := opts.Encode(t, task.FormatProperties)
	if err != nil {
		panic(err)
	}
	fmt.Print(string(body))
	// Output:
	// #Tue Mar 05 14:07:09 UTC 2024
	// account=acme
	// attempts=1
	// contentId=dir/Ünï\: x
	// spaceId=s
	// storeId=1
	// type=BIT
}

func ExampleDecode() {
	// A DuraCloud audit message: java.util.Properties text.
	body := []byte("#Tue Mar 05 09:07:09 EST 2024\r\n" +
		"type=AUDIT\r\naccount=acme\r\nstoreId=4\r\nspaceId=photos\r\ncontentId=\\u00fcber.txt\r\n" +
		"action=DELETE_CONTENT\r\ndate-time=1709647629000\r\n")
	t, err := task.Decode(body)
	if err != nil {
		panic(err)
	}
	a, err := task.AuditFrom(t)
	fmt.Println(a.Action, a.ContentID, a.DateTime.Format(time.RFC3339), err)

	_, err = task.Decode([]byte(`{"v":2,"type":"DUP"}`))
	fmt.Println(err)
	// Output:
	// DELETE_CONTENT über.txt 2024-03-05T14:07:09Z <nil>
	// task: malformed message: json: unsupported envelope version 2 (this build reads version 1)
}
