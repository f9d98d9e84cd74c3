// udpfloor: the floor of an idle follower's CPU on this machine: a process that only waits in
// epoll_wait on a UDP socket and reads each datagram (plus the EAGAIN read), nothing else.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
  if (argc != 3) { fprintf(stderr, "usage: %s ADDRESS PORT (runs until killed)\n", argv[0]); return 2; }
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  struct sockaddr_in a = {0}; a.sin_family = AF_INET; a.sin_port = htons(atoi(argv[2]));
  if (inet_pton(AF_INET, argv[1], &a.sin_addr) != 1) { fprintf(stderr, "not an IPv4 address: %s\n", argv[1]); return 2; }
  if (bind(s, (struct sockaddr*)&a, sizeof a)) { perror("bind"); return 1; }
  int ep = epoll_create1(0); struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.fd = s};
  epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
  char buf[2048]; long n = 0;
  for (;;) { struct epoll_event out; if (epoll_wait(ep, &out, 1, -1) < 1) continue;
    while (recv(s, buf, sizeof buf, 0) >= 0) n++; }
}
