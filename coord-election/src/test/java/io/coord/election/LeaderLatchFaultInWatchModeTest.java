package io.coord.election;

import io.coord.testkit.InWatchMode;

@InWatchMode
class LeaderLatchFaultInWatchModeTest extends LeaderLatchFaultTest {}
