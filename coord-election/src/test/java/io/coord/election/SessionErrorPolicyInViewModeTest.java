package io.coord.election;

import io.coord.testkit.InViewMode;

@InViewMode
class SessionErrorPolicyInViewModeTest extends SessionErrorPolicyTest {}
