/* ringfloor.c: the machine's floor for one hop of a ring election.
 *
 * N processes on 127.0.0.1 (ports chosen by the kernel) pass a 64-byte token round
 * a ring; each member, on the token, forwards it to the next member and then sends
 * a 16-byte acknowledgement back to the previous one (the datagrams of one hop of
 * electd's reliable link). The first member times LAPS laps, one at a time, with a
 * pause of 20 ms between them, and prints the time per hop: median, best and mean
 * (microseconds). Nothing else runs in the members: blocking recv and sendto.
 *
 *   gcc -O2 -o ringfloor ringfloor.c && ./ringfloor 256 30
 *
 * Every member is a process of its own, as electd's nodes are; each dies with the
 * first member (PR_SET_PDEATHSIG) and is stopped by its PID at the end. A lap whose
 * token does not come back within a second is counted lost, not waited for. */
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s N LAPS   (2 <= N <= 4096, 1 <= LAPS <= 1000)\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[1]), laps = atoi(argv[2]);
    if (n < 2 || n > 4096 || laps < 1 || laps > 1000) {
        fprintf(stderr, "%s: N must be 2..4096 and LAPS 1..1000\n", argv[0]);
        return 2;
    }
    int *fd = calloc(n, sizeof *fd);
    struct sockaddr_in *a = calloc(n, sizeof *a);
    pid_t *pid = calloc(n, sizeof *pid);
    double *lap = calloc(laps, sizeof *lap);
    if (!fd || !a || !pid || !lap) return 1;
    for (int i = 0; i < n; i++) {
        socklen_t len = sizeof a[i];
        fd[i] = socket(AF_INET, SOCK_DGRAM, 0);
        a[i].sin_family = AF_INET;
        a[i].sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd[i] < 0 || bind(fd[i], (void *)&a[i], sizeof a[i]) ||
            getsockname(fd[i], (void *)&a[i], &len)) {
            perror("socket");
            return 1;
        }
    }
    pid_t parent = getpid();
    for (int i = 1; i < n; i++) {
        pid[i] = fork();
        if (pid[i] < 0) {
            perror("fork");
            for (int j = 1; j < i; j++) kill(pid[j], SIGKILL);
            return 1;
        }
        if (pid[i] == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) _exit(0);
            char b[64];
            for (;;) {
                ssize_t r = recv(fd[i], b, sizeof b, 0);
                if (r == 64) {
                    sendto(fd[i], b, 64, 0, (void *)&a[(i + 1) % n], sizeof a[0]);
                    sendto(fd[i], b, 16, 0, (void *)&a[i - 1], sizeof a[0]);
                }
            }
        }
    }
    struct timeval limit = {1, 0};
    setsockopt(fd[0], SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    char b[64];
    memset(b, 0, sizeof b);
    int done = 0, lost = 0;
    usleep(200000); /* the members reach their recv */
    for (int l = 0; l < laps; l++) {
        b[0] = (char)l;
        double t0 = now();
        sendto(fd[0], b, 64, 0, (void *)&a[1], sizeof a[0]);
        int back = 0;
        /* Bounded: acks (16 bytes) and a stale token are skipped, at most 4 per lap. */
        for (int k = 0; k < 4 && !back; k++) {
            ssize_t r = recv(fd[0], b, sizeof b, 0);
            if (r < 0) break; /* a second without the token */
            back = r == 64 && b[0] == (char)l;
        }
        if (!back) {
            lost++;
        } else {
            sendto(fd[0], b, 16, 0, (void *)&a[n - 1], sizeof a[0]);
            lap[done++] = now() - t0;
        }
        usleep(20000);
    }
    for (int i = 1; i < n; i++) kill(pid[i], SIGKILL);
    while (wait(NULL) > 0) {}
    if (done == 0) {
        printf("n=%d laps=%d lost=%d: no lap came back\n", n, laps, lost);
        return 1;
    }
    qsort(lap, done, sizeof *lap, cmp);
    double sum = 0;
    for (int i = 0; i < done; i++) sum += lap[i];
    printf("n=%d laps=%d lost=%d per-hop us: median %.1f best %.1f mean %.1f\n", n, done, lost,
           lap[done / 2] / n * 1e6, lap[0] / n * 1e6, sum / done / n * 1e6);
    return 0;
}
