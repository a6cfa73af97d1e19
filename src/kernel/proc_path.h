/* /proc paths built without stdio: the sandbox formats them in a freshly cloned child and in a
 * SIGSYS handler, where snprintf's locale machinery is not guaranteed safe. */
#ifndef SPECX_PROC_PATH_H
#define SPECX_PROC_PATH_H

/* "/proc/self/fd/" + up to 10 digits + NUL */
#define SPECX_PROC_FD_PATH_MAX 32
/* "/proc/self/map_files/" + two 16-digit hex numbers + '-' + NUL */
#define SPECX_PROC_MAP_FILES_PATH_MAX 64

/* "/proc/" + up to 10 digits + "/" + a name of up to 12 characters + NUL */
#define SPECX_PROC_PID_PATH_MAX 32
/* "/proc/" + 10 digits + "/task/" + 10 digits + "/fdinfo/" + 10 digits + NUL */
#define SPECX_PROC_TASK_FD_PATH_MAX 64

/* Writes "/proc/self/fd/FD" into buf. */
void specx_proc_fd_path(char buf[SPECX_PROC_FD_PATH_MAX], int fd);
/* Writes "/proc/self/map_files/START-END" (lowercase hex, as the kernel names them). */
void specx_proc_map_files_path(char buf[SPECX_PROC_MAP_FILES_PATH_MAX], unsigned long start,
                               unsigned long end);

/* Writes "/proc/PID/NAME" into buf (NAME: "pagemap", "maps"...; 0 for PID: "/proc/self/NAME"). */
void specx_proc_pid_path(char buf[SPECX_PROC_PID_PATH_MAX], int pid, const char *name);

/* Writes "/proc/PID/task/TID/DIR/FD" into buf (DIR: "fd" or "fdinfo"; no "/FD" if FD < 0):
 * another thread's descriptor, reached without holding it. */
void specx_proc_task_fd_path(char buf[SPECX_PROC_TASK_FD_PATH_MAX], int pid, int tid,
                             const char *dir, int fd);

#endif
