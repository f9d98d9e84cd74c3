// The floor of one election hop on this machine: two processes exchange one 100-byte
// UDP datagram at a time over 127.0.0.1 (ports 47001 and 47002), the sender sleeping
// GAP_US between exchanges so that both are idle, as a ring member is, when each
// datagram arrives. Prints the one-way latency (half the round trip): p10, median, p90.
//
//   gcc -O2 -Wall -o /tmp/pingpong docs/bench/scale-cold/pingpong.c
//   /tmp/pingpong [EXCHANGES=2000 (1..100000)] [GAP_US=1000 (0..100000)]
//
// Bounded: every receive times out after 2 s, and the echoing child is waited for by its
// PID. docs/bench/ANALYSIS.md (round 24) compares it with the time one hop of an
// election takes between `electd run` processes.
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int udp(unsigned short port) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {.tv_sec = 2};
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    if (s < 0 || setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0 ||
        bind(s, (struct sockaddr *)&a, sizeof a) < 0) {
        fprintf(stderr, "pingpong: cannot bind 127.0.0.1:%u: ", port);
        perror("");
        exit(2);
    }
    return s;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 2000;
    long gap = argc > 2 ? strtol(argv[2], NULL, 10) : 1000;
    if (n < 1 || n > 100000 || gap < 0 || gap > 100000) {
        fprintf(stderr, "usage: pingpong [EXCHANGES 1..100000] [GAP_US 0..100000]\n");
        return 2;
    }
    int sa = udp(47001), sb = udp(47002);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(47001)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct sockaddr_in b = a;
    b.sin_port = htons(47002);
    char buf[200];
    memset(buf, 1, sizeof buf);
    pid_t child = fork();
    if (child < 0) {
        perror("pingpong: fork");
        return 2;
    }
    if (child == 0) {
        // Echo until a 1-byte datagram (the end) or 2 s of silence.
        for (;;) {
            ssize_t r = recv(sb, buf, sizeof buf, 0);
            if (r <= 1)
                _exit(0);
            sendto(sb, buf, (size_t)r, 0, (struct sockaddr *)&a, sizeof a);
        }
    }
    double *v = malloc(sizeof(double) * (size_t)n);
    long got = 0;
    for (long i = 0; i < n && v; i++) {
        usleep((useconds_t)gap);
        double t = now_us();
        sendto(sa, buf, 100, 0, (struct sockaddr *)&b, sizeof b);
        if (recv(sa, buf, sizeof buf, 0) != 100)
            break;
        v[got++] = (now_us() - t) / 2;
    }
    sendto(sa, buf, 1, 0, (struct sockaddr *)&b, sizeof b);
    waitpid(child, NULL, 0);
    if (!v || got == 0) {
        fprintf(stderr, "pingpong: no exchange completed\n");
        return 1;
    }
    qsort(v, (size_t)got, sizeof(double), cmp);
    printf("%ld exchanges, gap %ld us; one-way us: p10 %.1f median %.1f p90 %.1f\n", got, gap,
           v[got / 10], v[got / 2], v[got * 9 / 10]);
    free(v);
    return 0;
}
