// The words the training runtime puts into a rank's error when a collective failed because
// another rank went away. The host looks for them to tell a consequence from its cause when
// several ranks of a run fail at once, and names the cause.
#ifndef MLH_PEER_LOST_HPP
#define MLH_PEER_LOST_HPP

namespace mlh {
inline constexpr const char* kPeerLostText = "another rank has probably stopped";
}

#endif
