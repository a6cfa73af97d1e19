/* Unit tests of the slowfs device model (src/slowfs/model.c): striping, reservations, the
 * bus, the idle class and jitter, all on virtual time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slowfs/model.h"
#include "slowfs/presets.h"

#include "check.h"

#define CHECK_NEAR(a, b) CHECK(fabs((a) - (b)) < 1e-9)

/* The paper's array without jitter or bus limit unless a test sets them. */
static struct model_params paper(void)
{
    return (struct model_params){ .disks = 4, .stripe_bytes = 65536, .latency_s = 0.012,
                                  .disk_bps = 40e6, .priority = true, .seed = 1 };
}

static void test_split_within_one_unit(void)
{
    struct model_params p = paper();
    struct model_piece pc[4];
    CHECK(model_split(&p, 0, 4096, 4096, pc) == 1);
    CHECK(pc[0].disk == 0 && pc[0].bytes == 4096);
    CHECK(model_split(&p, 2, 65536 + 100, 10, pc) == 1);
    CHECK(pc[0].disk == 3 && pc[0].bytes == 10);
    CHECK(model_split(&p, 0, 0, 0, pc) == 0);
}

static void test_split_across_units(void)
{
    struct model_params p = paper();
    struct model_piece pc[4];
    CHECK(model_split(&p, 0, 61440, 8192, pc) == 2);
    CHECK(pc[0].disk == 0 && pc[0].bytes == 4096);
    CHECK(pc[1].disk == 1 && pc[1].bytes == 4096);
    /* Eight units over four disks: each disk reads its two units as one transfer. */
    CHECK(model_split(&p, 3, 0, 8 * 65536, pc) == 4);
    CHECK(pc[0].disk == 3 && pc[1].disk == 0 && pc[2].disk == 1 && pc[3].disk == 2);
    for (int i = 0; i < 4; i++)
        CHECK(pc[i].bytes == 2 * 65536);
}

static void test_split_single_disk_never_splits(void)
{
    struct model_params p = paper();
    p.disks = 1;
    struct model_piece pc[1];
    CHECK(model_split(&p, 7, 1000, 1 << 20, pc) == 1);
    CHECK(pc[0].disk == 0 && pc[0].bytes == 1 << 20);
}

static void test_split_any_placement_keeps_request_whole(void)
{
    struct model_params p = paper();
    p.placement = MODEL_ANY;
    struct model_piece pc[4];
    CHECK(model_split(&p, 1, 61440, 300000, pc) == 1);
    CHECK(pc[0].disk == MODEL_ANY_DISK && pc[0].bytes == 300000);
    CHECK(model_split(&p, 1, 61440, 0, pc) == 0);
}

/* Placed anywhere, requests take the lane that frees first, never queueing behind each other
 * while a lane is free. */
static void test_any_placement_uses_free_lanes(void)
{
    struct model_params p = paper();
    p.placement = MODEL_ANY;
    struct model *m = model_new(&p);
    unsigned used = 0;
    for (int i = 0; i < 4; i++) {
        struct model_slot s = model_reserve_regular(m, MODEL_ANY_DISK, 4096, 0.012, 0);
        CHECK_NEAR(s.start, 0);
        used |= 1u << s.disk;
    }
    CHECK(used == 0xf);
    struct model_slot fifth = model_reserve_regular(m, MODEL_ANY_DISK, 4096, 0.012, 0);
    CHECK(fabs(fifth.start - (0.012 + 4096 / 40e6)) < 1e-9);
    struct model_slot idle;
    double retry;
    CHECK(!model_try_start_idle(m, MODEL_ANY_DISK, 4096, 0.012, 0.001, &idle, &retry));
    CHECK(fabs(retry - (0.012 + 4096 / 40e6)) < 1e-9);
    CHECK(model_try_start_idle(m, MODEL_ANY_DISK, 4096, 0.012, 0.02, &idle, &retry));
    CHECK(idle.disk != fifth.disk); /* the lanes whose work is done */
    model_free(m);
}

static void test_regular_fifo_per_disk(void)
{
    struct model_params p = paper();
    struct model *m = model_new(&p);
    double service = 0.012 + 4096 / 40e6;
    struct model_slot a = model_reserve_regular(m, 0, 4096, 0.012, 1.0);
    CHECK_NEAR(a.start, 1.0);
    CHECK_NEAR(a.finish, 1.0 + service);
    CHECK_NEAR(a.service, service);
    struct model_slot b = model_reserve_regular(m, 0, 4096, 0.012, 1.001);
    CHECK_NEAR(b.start, a.finish); /* queued behind a */
    CHECK_NEAR(b.finish, a.finish + service);
    struct model_slot c = model_reserve_regular(m, 1, 4096, 0.012, 1.001);
    CHECK_NEAR(c.start, 1.001); /* another disk works in parallel */
    struct model_disk_stats d0 = model_disk_stats(m, 0);
    CHECK(d0.requests == 2 && d0.bytes == 8192);
    CHECK_NEAR(d0.busy_s, 2 * service);
    model_free(m);
}

static void test_bus_caps_total(void)
{
    struct model_params p = paper();
    p.latency_s = 0;
    p.disk_bps = 1e12;
    p.bus_bps = 40e6;
    struct model *m = model_new(&p);
    double xfer = 65536 / 40e6;
    struct model_slot a = model_reserve_regular(m, 0, 65536, 0, 0);
    struct model_slot b = model_reserve_regular(m, 1, 65536, 0, 0);
    struct model_slot c = model_reserve_regular(m, 2, 65536, 0, 0);
    CHECK(fabs(a.finish - xfer) < 1e-6);
    CHECK(fabs(b.finish - 2 * xfer) < 1e-6);
    CHECK(fabs(c.finish - 3 * xfer) < 1e-6);
    model_free(m);
}

/* A deep queue on one disk books the bus far ahead; a free disk must still use the gap. */
static void test_bus_fills_gaps(void)
{
    struct model_params p = paper();
    p.bus_bps = 40e6;
    struct model *m = model_new(&p);
    for (int i = 0; i < 3; i++)
        model_reserve_regular(m, 0, 4096, 0.012, 0);
    struct model_slot s = model_reserve_regular(m, 1, 4096, 0.012, 0.001);
    CHECK(fabs(s.finish - (0.013 + 4096 / 40e6)) < 1e-6);
    model_free(m);
}

static void test_idle_waits_for_regular(void)
{
    struct model_params p = paper();
    struct model *m = model_new(&p);
    struct model_slot r = model_reserve_regular(m, 0, 4096, 0.012, 0);
    struct model_slot s;
    double retry = -1;
    CHECK(!model_try_start_idle(m, 0, 4096, 0.012, 0.001, &s, &retry));
    CHECK_NEAR(retry, r.finish);
    CHECK(model_try_start_idle(m, 1, 4096, 0.012, 0.001, &s, &retry)); /* free disk */
    CHECK(model_try_start_idle(m, 0, 4096, 0.012, r.finish, &s, &retry));
    CHECK_NEAR(s.start, r.finish);
    model_free(m);
}

static void test_idle_waits_for_idle(void)
{
    struct model_params p = paper();
    struct model *m = model_new(&p);
    struct model_slot a, b;
    double retry;
    CHECK(model_try_start_idle(m, 2, 4096, 0.012, 0, &a, &retry));
    CHECK(!model_try_start_idle(m, 2, 4096, 0.012, 0.005, &b, &retry));
    CHECK_NEAR(retry, a.finish);
    CHECK(model_try_start_idle(m, 2, 4096, 0.012, a.finish, &b, &retry));
    /* a was replaced: its finish is the one it had. */
    CHECK_NEAR(model_idle_finish(m, &a), a.finish);
    CHECK_NEAR(model_idle_finish(m, &b), b.finish);
    model_free(m);
}

/* Idle pieces start in the order they joined their disk's queue, whoever asks first: a later
 * piece waits while an earlier one has not started, even on a free disk. */
static void test_idle_pieces_start_in_order(void)
{
    struct model_params p = paper();
    struct model *m = model_new(&p);
    struct model_slot a, b;
    double retry;
    uint64_t first = model_idle_join(m, 1), second = model_idle_join(m, 1);
    CHECK(!model_try_start_idle_in_turn(m, 1, second, 4096, 0.012, 0, &b, &retry));
    CHECK_NEAR(retry, MODEL_IDLE_TURN_POLL_S);
    CHECK(model_try_start_idle_in_turn(m, 1, first, 4096, 0.012, 0, &a, &retry));
    CHECK(!model_try_start_idle_in_turn(m, 1, second, 4096, 0.012, 0.001, &b, &retry));
    CHECK_NEAR(retry, a.finish);
    CHECK(model_try_start_idle_in_turn(m, 1, second, 4096, 0.012, a.finish, &b, &retry));
    /* Another disk's queue is its own. */
    CHECK(model_try_start_idle_in_turn(m, 2, model_idle_join(m, 2), 4096, 0.012, 0.001, &b,
                                       &retry));
    model_free(m);
}

/* Regular work is never delayed by idle work: it preempts, the idle piece resumes later and
 * pays its access latency again. */
static void test_regular_preempts_idle(void)
{
    struct model_params p = paper();
    struct model *m = model_new(&p);
    struct model_slot idle, r1, r2;
    double retry;
    CHECK(model_try_start_idle(m, 0, 4096, 0.012, 0, &idle, &retry));
    r1 = model_reserve_regular(m, 0, 4096, 0.012, 0.005);
    CHECK_NEAR(r1.start, 0.005);
    CHECK_NEAR(model_idle_finish(m, &idle), idle.finish + r1.service + 0.012);
    r2 = model_reserve_regular(m, 0, 4096, 0.012, 0.006); /* same burst: no second restart */
    CHECK_NEAR(r2.start, r1.finish);
    CHECK_NEAR(model_idle_finish(m, &idle), idle.finish + r1.service + r2.service + 0.012);
    model_free(m);
}

/* A regular piece that arrives after the idle piece finished leaves it alone. */
static void test_no_preemption_after_finish(void)
{
    struct model_params p = paper();
    struct model *m = model_new(&p);
    struct model_slot idle;
    double retry;
    CHECK(model_try_start_idle(m, 0, 4096, 0.012, 0, &idle, &retry));
    struct model_slot r = model_reserve_regular(m, 0, 4096, 0.012, idle.finish + 0.001);
    CHECK_NEAR(r.start, idle.finish + 0.001);
    CHECK_NEAR(model_idle_finish(m, &idle), idle.finish);
    model_free(m);
}

/* On the bus, a regular transfer displaces an idle one of another disk. */
static void test_bus_preempts_idle(void)
{
    struct model_params p = paper();
    p.latency_s = 0;
    p.disk_bps = 1e12;
    p.bus_bps = 40e6;
    struct model *m = model_new(&p);
    double xfer = 65536 / 40e6, retry;
    struct model_slot idle;
    CHECK(model_try_start_idle(m, 1, 65536, 0, 0, &idle, &retry));
    struct model_slot r = model_reserve_regular(m, 0, 65536, 0, 0);
    CHECK(fabs(r.finish - xfer) < 1e-6);
    CHECK(fabs(model_idle_finish(m, &idle) - 2 * xfer) < 1e-6);
    model_free(m);
}

static void test_metadata_costs_latency_only(void)
{
    struct model_params p = paper();
    p.bus_bps = 40e6;
    struct model *m = model_new(&p);
    struct model_slot s = model_reserve_regular(m, 3, 0, 0.002, 5.0);
    CHECK_NEAR(s.finish, 5.002);
    model_free(m);
}

/* A listing pays one READDIR request per page of entries, however the kernel splits its
 * calls: 2,500 entries at 1,000 a page are three requests, in one call or in many. */
static void test_readdir_requests_per_page(void)
{
    struct model_params p = paper();
    p.readdir_page = 1000;
    CHECK(model_readdir_requests(&p, 0, 0) == 0);
    CHECK(model_readdir_requests(&p, 0, 1) == 1);
    CHECK(model_readdir_requests(&p, 0, 1000) == 1);
    CHECK(model_readdir_requests(&p, 0, 1001) == 2);
    CHECK(model_readdir_requests(&p, 0, 2500) == 3);
    uint64_t in_calls = 0;
    for (uint64_t from = 0; from < 2500; from += 24) /* a FUSE buffer holds ~24 entries */
        in_calls += model_readdir_requests(&p, from, from + 24 > 2500 ? 2500 - from : 24);
    CHECK(in_calls == 3);
    CHECK(model_readdir_requests(&p, 999, 1) == 0 && model_readdir_requests(&p, 1000, 1) == 1);
    p.readdir_page = 0; /* never configured: every entry is its own page */
    CHECK(model_readdir_requests(&p, 5, 3) == 3);
}

/* What the nfs preset charges for metadata, in its own parameters: each request is one round
 * trip on a free lane, so three lookups of a path's components in a row take three round
 * trips, and nine at once on eight lanes take two. */
static void test_nfs_preset_metadata(void)
{
    struct model_params p = config_model_params(&preset_find("nfs")->config);
    CHECK(model_metadata_modelled(&p) && p.placement == MODEL_ANY && p.disks == 8);
    CHECK(strcmp(model_metadata_name(MODEL_LOOKUP), "lookup") == 0 &&
          strcmp(model_metadata_name(MODEL_READDIR), "readdir") == 0);
    double rtt = p.metadata_s[MODEL_LOOKUP];
    CHECK_NEAR(rtt, 0.0002);
    struct model *m = model_new(&p);
    double t = 10.0;
    for (int component = 0; component < 3; component++)
        t = model_reserve_regular(m, MODEL_ANY_DISK, 0, rtt, t).finish;
    CHECK_NEAR(t, 10.0 + 3 * rtt);
    double last = 0;
    for (int i = 0; i < 9; i++)
        last = model_reserve_regular(m, MODEL_ANY_DISK, 0, rtt, 20.0).finish;
    CHECK_NEAR(last, 20.0 + 2 * rtt);
    model_free(m);
    /* The object store: a lookup is a HEAD, a first-byte latency; an open is free. */
    struct model_params s3 = config_model_params(&preset_find("object-store")->config);
    CHECK_NEAR(s3.metadata_s[MODEL_LOOKUP], s3.latency_s);
    CHECK(s3.metadata_s[MODEL_OPEN] == 0 && s3.readdir_page == 1000);
    /* The local devices charge nothing. */
    struct model_params disk = config_model_params(&preset_find("paper2003")->config);
    CHECK(!model_metadata_modelled(&disk));
}

static void test_jitter_bounds_and_seed(void)
{
    struct model_params p = paper();
    p.jitter_frac = 0.5;
    struct model *a = model_new(&p), *b = model_new(&p);
    double sum = 0, lo = 1, hi = 0;
    int n = 20000;
    for (int i = 0; i < n; i++) {
        double l = model_latency(a);
        CHECK_NEAR(l, model_latency(b)); /* same seed, same sequence */
        sum += l;
        lo = l < lo ? l : lo;
        hi = l > hi ? l : hi;
    }
    CHECK(lo >= 0.006 && hi <= 0.018);
    CHECK(lo < 0.0065 && hi > 0.0175); /* the whole range is used */
    CHECK(fabs(sum / n - 0.012) < 0.0002);
    model_free(a);
    model_free(b);
    p.jitter_frac = 0;
    struct model *c = model_new(&p);
    CHECK_NEAR(model_latency(c), 0.012);
    model_free(c);
}

int main(void)
{
    test_split_within_one_unit();
    test_split_across_units();
    test_split_single_disk_never_splits();
    test_split_any_placement_keeps_request_whole();
    test_any_placement_uses_free_lanes();
    test_regular_fifo_per_disk();
    test_bus_caps_total();
    test_bus_fills_gaps();
    test_idle_waits_for_regular();
    test_idle_waits_for_idle();
    test_idle_pieces_start_in_order();
    test_regular_preempts_idle();
    test_no_preemption_after_finish();
    test_bus_preempts_idle();
    test_metadata_costs_latency_only();
    test_readdir_requests_per_page();
    test_nfs_preset_metadata();
    test_jitter_bounds_and_seed();
    return check_status();
}
