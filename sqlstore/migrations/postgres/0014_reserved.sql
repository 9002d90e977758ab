-- Reserved: another branch's migration takes this number; the integrator replaces this file with it.
SELECT 1;
