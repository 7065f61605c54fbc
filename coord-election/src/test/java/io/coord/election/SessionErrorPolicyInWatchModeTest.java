package io.coord.election;

import io.coord.testkit.InWatchMode;

@InWatchMode
class SessionErrorPolicyInWatchModeTest extends SessionErrorPolicyTest {}
