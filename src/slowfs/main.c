/* specx slowfs: mount a backing directory through an emulated slow storage device, and the
 * --stats, --unmount and --power-cut commands that talk to a running one. */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "slowfs/checks.h"
#include "slowfs/control.h"
#include "slowfs/options.h"
#include "slowfs/passthrough.h"
#include "common/util.h"
#include "slowfs/volatile.h"

/* Nice value of the server's threads: well ahead of ordinary programs, not real-time. */
#define SERVER_NICE -10

/* Worker threads beyond the requests the kernel may have in flight, for synchronous ones. */
#define SPARE_THREADS 16

/* Requests the kernel may send at once (docs/design/slowfs.md; libfuse's defaults are 12, with 10
 * threads): enough for every disk to have a queue, and never fewer than 256, so that
 * idle-class prefetches waiting for a disk inside slowfs, where the model can put regular
 * requests first, do not fill the kernel's slots and queue regular reads behind them in the
 * kernel, where it cannot. */
static unsigned max_background_for(unsigned disks)
{
    unsigned n = 4 * disks;
    return n < 256 ? 256 : n;
}

/* libfuse's mount options; the fsname names the backing directory where that needs no
 * escaping. */
static void build_fuse_args(struct fuse_args *args, const char *backing)
{
    char opts[PATH_MAX + 256];
    const char *safe = strpbrk(backing, ",\\") ? "specx-slowfs" : backing;
    snprintf(opts, sizeof opts,
             "allow_other,default_permissions,subtype=specx-slowfs,fsname=%s", safe);
    fuse_opt_add_arg(args, "specx-slowfs");
    fuse_opt_add_arg(args, "-o");
    fuse_opt_add_arg(args, opts);
}

static int serve(struct fuse *f, unsigned threads)
{
    struct fuse_loop_config *loop = fuse_loop_cfg_create();
    if (!loop)
        return -1;
    fuse_loop_cfg_set_max_threads(loop, threads);
    /* Keep idle workers around: creating a thread per burst of requests costs latency. */
    fuse_loop_cfg_set_idle_threads(loop, threads);
    int ret = fuse_loop_mt(f, loop);
    fuse_loop_cfg_destroy(loop);
    return ret;
}

static int mount_and_serve(const struct slowfs_options *o)
{
    char err[512], backing[PATH_MAX], mountpoint[PATH_MAX];
    if (check_root(err, sizeof err) ||
        check_mount_paths(o->backing, o->mountpoint, backing, mountpoint, PATH_MAX, err,
                          sizeof err))
        specx_die(1, "%s", err);
    struct slowfs_state st = {
        .backing = backing,
        .max_background = max_background_for(o->device.disks),
        .count_flushes = o->count_flushes,
        .attr_timeout_s = o->device.attr_timeout_s,
    };
    st.backing_fd = open(backing, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (st.backing_fd < 0)
        specx_die(1, "cannot open '%s': %m", o->backing);
    st.device = device_new(&o->device, o->preset);
    if (!st.device)
        specx_die(1, "out of memory");
    /* Not under --volatile-cache: after a power cut the kernel must not answer from what
     * it kept. */
    st.cache_metadata = model_metadata_modelled(device_params(st.device)) && !o->volatile_cache;
    umask(0); /* the kernel already applied the caller's umask to every mode we get */
    /* Modelled times are met by absolute sleeps: without slack they end on time (threads
     * created later inherit this). */
    prctl(PR_SET_TIMERSLACK, 1UL);
    /* A device's timing does not depend on how busy the CPUs are: the server's threads mostly
     * sleep, and when one wakes to complete a request it should run at once, not after the
     * programs being measured (and the speculative processes) have used their time slices.
     * Threads inherit the nice value of the thread that creates them. */
    setpriority(PRIO_PROCESS, 0, SERVER_NICE);

    const struct fuse_operations *ops = slowfs_operations_for(o->count_flushes);
    if (o->volatile_cache && !(ops = volatile_start(&st, ops, o->power_cut_after, err,
                                                    sizeof err)))
        specx_die(1, "%s", err);
    struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
    build_fuse_args(&args, backing);
    struct fuse *f = fuse_new(&args, ops, sizeof *ops, &st);
    fuse_opt_free_args(&args);
    if (!f) {
        volatile_stop();
        specx_die(1, "cannot set up the file system");
    }
    if (fuse_mount(f, mountpoint) != 0) {
        fuse_destroy(f);
        volatile_stop();
        specx_die(1, "cannot mount '%s'", o->mountpoint);
    }
    /* With -d the parent exits only now, once the mount is live, so scripts can use it. */
    if (fuse_daemonize(!o->daemonize) != 0 ||
        fuse_set_signal_handlers(fuse_get_session(f)) != 0) {
        fuse_unmount(f);
        fuse_destroy(f);
        volatile_stop();
        specx_die(1, "cannot start serving '%s'", o->mountpoint);
    }
    int ret = serve(f, st.max_background + SPARE_THREADS);
    fuse_remove_signal_handlers(fuse_get_session(f));
    fuse_unmount(f);
    fuse_destroy(f);
    volatile_stop();
    device_free(st.device);
    close(st.backing_fd);
    /* libfuse reports an exit by signal as the signal's number: a clean, asked-for end. */
    return ret == 0 || ret == SIGINT || ret == SIGTERM || ret == SIGHUP ? 0 : 1;
}

int main(int argc, char **argv)
{
    specx_set_progname("specx slowfs");
    struct slowfs_options o;
    char err[512];
    if (options_parse(argc, argv, &o, err, sizeof err) != 0)
        specx_die(2, "%s", err);
    switch (o.action) {
    case ACTION_HELP:
        options_usage(stdout);
        return 0;
    case ACTION_VERSION:
        printf("specx slowfs %s\n", SPECX_VERSION);
        return 0;
    case ACTION_STATS:
        return control_stats(o.mountpoint, o.json);
    case ACTION_UNMOUNT:
        return control_unmount(o.mountpoint);
    case ACTION_POWER_CUT:
        return control_power_cut(o.mountpoint);
    case ACTION_MOUNT:
        break;
    }
    return mount_and_serve(&o);
}
