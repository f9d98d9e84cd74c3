// leaderfloor: what an idle leader's system calls cost on this machine, without electd.
// A sender sends 4 datagrams of 35 bytes (a Bully heartbeat's size) every 10 ms to four
// sockets that are drained only every 100 ms (as electd's followers read heartbeats in
// batches, they are not woken by each), in four ways:
//   0  the bench's floor (src/bench/cost/floor.rs): sleep in recv with SO_RCVTIMEO, 4 sendto
//   1  electd's pattern: epoll_wait on a timerfd, read it, one sendmmsg, timerfd_settime
//   2  the same with 4 sendto instead of the sendmmsg
//   3  clock_nanosleep to an absolute deadline, one sendmmsg
// Each mode runs in a child for 1.5 s, then is measured for SECONDS (its own CPU time, as a
// share of one core); every child is stopped by its PID. Addresses: 127.0.63.1-4 and .100.
// Usage: leaderfloor SECONDS (1..600)
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct sockaddr_in to[4];

static double now_s(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static int sink(void) {
  int s[4];
  char b[2048];
  for (int i = 0; i < 4; i++) {
    s[i] = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    int r = 1 << 20;
    setsockopt(s[i], SOL_SOCKET, SO_RCVBUF, &r, sizeof r);
    if (bind(s[i], (void *)&to[i], sizeof to[i])) { perror("bind"); return 1; }
  }
  for (long k = 0; k < 60L * 60 * 10; k++) {  // at most an hour; killed by PID before
    usleep(100000);
    for (int i = 0; i < 4; i++)
      while (recv(s[i], b, sizeof b, 0) > 0) {}
  }
  return 0;
}

static void sender(int mode, double seconds) {
  int s = socket(AF_INET, SOCK_DGRAM | (mode ? SOCK_NONBLOCK : 0), 0);
  struct sockaddr_in me = {.sin_family = AF_INET, .sin_port = htons(22100)};
  inet_pton(AF_INET, "127.0.63.100", &me.sin_addr);
  if (bind(s, (void *)&me, sizeof me)) { perror("bind"); exit(1); }
  char payload[35], b[2048];
  memset(payload, 0x5a, sizeof payload);
  struct mmsghdr mm[4];
  struct iovec iov[4];
  for (int i = 0; i < 4; i++) {
    iov[i] = (struct iovec){.iov_base = payload, .iov_len = sizeof payload};
    memset(&mm[i], 0, sizeof mm[i]);
    mm[i].msg_hdr.msg_name = &to[i];
    mm[i].msg_hdr.msg_namelen = sizeof to[i];
    mm[i].msg_hdr.msg_iov = &iov[i];
    mm[i].msg_hdr.msg_iovlen = 1;
  }
  int ep = epoll_create1(0), tf = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
  struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.u32 = 1};
  epoll_ctl(ep, EPOLL_CTL_ADD, tf, &ev);
  struct epoll_event ev2 = {.events = EPOLLIN | EPOLLOUT | EPOLLET, .data.u32 = 2};
  epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev2);
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  long periods = (long)((1.5 + seconds) * 100), warm = 150;
  double c0 = 0, w0 = 0;
  for (long k = 0; k < periods; k++) {
    if (k == warm) { c0 = now_s(CLOCK_PROCESS_CPUTIME_ID); w0 = now_s(CLOCK_MONOTONIC); }
    next.tv_nsec += 10000000;
    if (next.tv_nsec >= 1000000000) { next.tv_nsec -= 1000000000; next.tv_sec++; }
    if (mode == 0) {
      struct timespec t;
      clock_gettime(CLOCK_MONOTONIC, &t);
      long ns = (next.tv_sec - t.tv_sec) * 1000000000L + next.tv_nsec - t.tv_nsec;
      if (ns > 0) {
        struct timeval tv = {ns / 1000000000, (ns % 1000000000) / 1000};
        if (!tv.tv_sec && !tv.tv_usec) tv.tv_usec = 1;
        setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        recv(s, b, sizeof b, 0);
      }
      for (int i = 0; i < 4; i++) sendto(s, payload, sizeof payload, 0, (void *)&to[i], sizeof to[i]);
    } else if (mode == 3) {
      clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
      sendmmsg(s, mm, 4, MSG_DONTWAIT);
    } else {
      struct itimerspec its = {.it_value = next};
      timerfd_settime(tf, TFD_TIMER_ABSTIME, &its, NULL);
      for (int tries = 0; tries < 64; tries++) {  // the timer, past other readiness
        struct epoll_event out[8];
        int n = epoll_wait(ep, out, 8, 1000), fired = 0;
        for (int j = 0; j < n; j++) fired |= out[j].data.u32 == 1;
        if (fired) break;
      }
      unsigned long long x;
      if (read(tf, &x, sizeof x) < 0) {}
      if (mode == 1) sendmmsg(s, mm, 4, MSG_DONTWAIT);
      else for (int i = 0; i < 4; i++) sendto(s, payload, sizeof payload, MSG_DONTWAIT, (void *)&to[i], sizeof to[i]);
    }
  }
  double cpu = now_s(CLOCK_PROCESS_CPUTIME_ID) - c0, wall = now_s(CLOCK_MONOTONIC) - w0;
  static const char *name[] = {"floor: SO_RCVTIMEO + 4 sendto", "epoll + timerfd + sendmmsg",
                               "epoll + timerfd + 4 sendto", "clock_nanosleep + sendmmsg"};
  printf("mode %d (%s): %.3f %% of a core over %.1f s\n", mode, name[mode], 100 * cpu / wall, wall);
  fflush(stdout);
}

int main(int argc, char **argv) {
  double seconds = argc == 2 ? atof(argv[1]) : 0;
  if (seconds < 1 || seconds > 600) { fprintf(stderr, "usage: %s SECONDS (1..600)\n", argv[0]); return 2; }
  for (int i = 0; i < 4; i++) {
    char a[32];
    to[i] = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons(22001 + i)};
    snprintf(a, sizeof a, "127.0.63.%d", i + 1);
    inet_pton(AF_INET, a, &to[i].sin_addr);
  }
  pid_t sk = fork();
  if (sk == 0) return sink();
  usleep(200000);
  for (int mode = 0; mode < 4; mode++) {
    pid_t p = fork();
    if (p == 0) { sender(mode, seconds); return 0; }
    waitpid(p, NULL, 0);
  }
  kill(sk, SIGKILL);
  waitpid(sk, NULL, 0);
  return 0;
}
