package cronjob

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMostRecent(t *testing.T) {
	created := time.Date(2026, 3, 1, 10, 0, 30, 0, time.UTC)
	tokyo := "Asia/Tokyo"
	sd := int64(60)
	for _, c := range []struct {
		name     string
		schedule string
		tz       *string
		last     *time.Time
		deadline *int64
		now      time.Time
		want     time.Time // zero: nothing due
		missed   int
	}{
		{name: "not yet", schedule: "*/5 * * * *", now: created.Add(time.Minute)},
		{name: "first time", schedule: "*/5 * * * *", now: created.Add(5 * time.Minute), want: time.Date(2026, 3, 1, 10, 5, 0, 0, time.UTC), missed: 1},
		{name: "several missed, the latest wins", schedule: "* * * * *", now: created.Add(3*time.Minute + time.Second),
			want: time.Date(2026, 3, 1, 10, 3, 0, 0, time.UTC), missed: 3},
		{name: "after the last schedule", schedule: "* * * * *", last: ptr(time.Date(2026, 3, 1, 10, 3, 0, 0, time.UTC)),
			now: time.Date(2026, 3, 1, 10, 3, 59, 0, time.UTC)},
		{name: "starting deadline bounds the look-back", schedule: "* * * * *", deadline: &sd, now: created.Add(10 * time.Hour),
			want: time.Date(2026, 3, 1, 20, 0, 0, 0, time.UTC), missed: 1},
		// 09:00 in Tokyo is 00:00 UTC.
		{name: "time zone", schedule: "0 9 * * *", tz: &tokyo, now: time.Date(2026, 3, 2, 0, 0, 1, 0, time.UTC),
			want: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), missed: 1},
		{name: "macro", schedule: "@hourly", now: created.Add(time.Hour), want: time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC), missed: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "c", CreationTimestamp: metav1.NewTime(created)},
				Spec: batchv1.CronJobSpec{Schedule: c.schedule, TimeZone: c.tz, StartingDeadlineSeconds: c.deadline}}
			if c.last != nil {
				lt := metav1.NewTime(*c.last)
				cj.Status.LastScheduleTime = &lt
			}
			s, loc, err := Schedule(cj)
			if err != nil {
				t.Fatal(err)
			}
			got, missed, ok := MostRecent(cj, s, loc, c.now)
			if ok != !c.want.IsZero() || (ok && (!got.Equal(c.want) || missed != c.missed)) {
				t.Errorf("MostRecent = %s, %d, %v; want %s, %d", got, missed, ok, c.want, c.missed)
			}
		})
	}
}

func TestJobFromTemplate(t *testing.T) {
	tz := "Europe/Paris"
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "tick", Namespace: "ns", UID: "u"},
		Spec: batchv1.CronJobSpec{Schedule: "* * * * *", TimeZone: &tz,
			JobTemplate: batchv1.JobTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}}}}
	_, loc, err := Schedule(cj)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	j := JobFromTemplate(cj, at, loc)
	if j.Name != "tick-29715120" || j.Labels["a"] != "b" || j.Annotations[ScheduledTimestampAnnotation] != "2026-07-01T14:00:00+02:00" {
		t.Errorf("job %s labels %v annotations %v", j.Name, j.Labels, j.Annotations)
	}
	if ref := metav1.GetControllerOf(j); ref == nil || ref.Kind != "CronJob" || ref.UID != "u" {
		t.Errorf("owner %+v", ref)
	}
}

func ptr[T any](v T) *T { return &v }
