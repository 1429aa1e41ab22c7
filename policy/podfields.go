package policy

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The pod fields a policy holds are checked at load against the
// enumerations and one-of rules that k8s.io/api/core/v1 documents for them
// (the product does not import k8s.io/kubernetes, whose validation package
// the API server runs), so that a typo such as `operator: Exist` is
// refused with its path when the policy loads, not by the API server on
// every pod. Messages use apimachinery's field errors, as the API server's.

func podFieldErrors(at string, s PodSettings) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath(at)
	for i, t := range s.Tolerations {
		errs = append(errs, tolerationErrors(p.Child("tolerations").Index(i), t)...)
	}
	for i, e := range s.Env {
		errs = append(errs, envSourceErrors(p.Child("env").Index(i), e)...)
	}
	for i, v := range s.Volumes {
		errs = append(errs, volumeErrors(p.Child("volumes").Index(i), v)...)
	}
	for i, m := range s.VolumeMounts {
		if m.MountPropagation != nil {
			errs = append(errs, enum(p.Child("volumeMounts").Index(i).Child("mountPropagation"), string(*m.MountPropagation),
				string(corev1.MountPropagationNone), string(corev1.MountPropagationHostToContainer), string(corev1.MountPropagationBidirectional))...)
		}
	}
	if sc := s.SecurityContext; sc != nil {
		sp := p.Child("securityContext")
		errs = append(errs, seccompErrors(sp.Child("seccompProfile"), sc.SeccompProfile)...)
		errs = append(errs, appArmorErrors(sp.Child("appArmorProfile"), sc.AppArmorProfile)...)
		if sc.FSGroupChangePolicy != nil {
			errs = append(errs, enum(sp.Child("fsGroupChangePolicy"), string(*sc.FSGroupChangePolicy),
				string(corev1.FSGroupChangeOnRootMismatch), string(corev1.FSGroupChangeAlways))...)
		}
	}
	if sc := s.ContainerSecurityContext; sc != nil {
		sp := p.Child("containerSecurityContext")
		errs = append(errs, seccompErrors(sp.Child("seccompProfile"), sc.SeccompProfile)...)
		errs = append(errs, appArmorErrors(sp.Child("appArmorProfile"), sc.AppArmorProfile)...)
		if sc.ProcMount != nil {
			errs = append(errs, enum(sp.Child("procMount"), string(*sc.ProcMount), string(corev1.DefaultProcMount), string(corev1.UnmaskedProcMount))...)
		}
	}
	for _, name := range requestsOverLimits(s.Resources) {
		req, lim := s.Resources.Requests[name], s.Resources.Limits[name]
		errs = append(errs, field.Invalid(p.Child("resources", "requests").Key(string(name)), req.String(), "must be less than or equal to the "+string(name)+" limit "+lim.String()))
	}
	return errs
}

// requestsOverLimits names, sorted, the resources whose request is above
// their limit, which the API server refuses.
func requestsOverLimits(r *corev1.ResourceRequirements) []corev1.ResourceName {
	if r == nil {
		return nil
	}
	var over []corev1.ResourceName
	for name, req := range r.Requests {
		if lim, ok := r.Limits[name]; ok && req.Cmp(lim) > 0 {
			over = append(over, name)
		}
	}
	slices.Sort(over)
	return over
}

func enum(p *field.Path, v string, allowed ...string) field.ErrorList {
	if sets.New(allowed...).Has(v) {
		return nil
	}
	return field.ErrorList{field.NotSupported(p, v, allowed)}
}

// tolerationErrors applies the rules of corev1.Toleration's field docs
// (k8s.io/api v0.36): an empty key needs Exists, Exists takes no value, Lt
// and Gt compare numbers, and the effects are an enumeration.
func tolerationErrors(p *field.Path, t corev1.Toleration) field.ErrorList {
	var errs field.ErrorList
	if t.Key != "" {
		for _, msg := range validation.IsQualifiedName(t.Key) {
			errs = append(errs, field.Invalid(p.Child("key"), t.Key, msg))
		}
	}
	if t.Key == "" && t.Operator != corev1.TolerationOpExists {
		errs = append(errs, field.Invalid(p.Child("operator"), t.Operator, "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
	}
	switch t.Operator {
	case corev1.TolerationOpEqual, "":
		for _, msg := range validation.IsValidLabelValue(t.Value) {
			errs = append(errs, field.Invalid(p.Child("value"), t.Value, msg))
		}
	case corev1.TolerationOpExists:
		if t.Value != "" {
			errs = append(errs, field.Invalid(p.Child("value"), t.Value, "value must be empty when `operator` is 'Exists'"))
		}
	case corev1.TolerationOpLt, corev1.TolerationOpGt:
		if _, err := strconv.ParseInt(t.Value, 10, 64); err != nil {
			errs = append(errs, field.Invalid(p.Child("value"), t.Value, "must be an integer when `operator` is 'Lt' or 'Gt'"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator,
			[]corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists, corev1.TolerationOpLt, corev1.TolerationOpGt}))
	}
	if t.Effect != "" {
		errs = append(errs, enum(p.Child("effect"), string(t.Effect),
			string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute))...)
	}
	return errs
}

func envSourceErrors(p *field.Path, e corev1.EnvVar) field.ErrorList {
	if e.ValueFrom == nil {
		return nil
	}
	n := setFields(*e.ValueFrom)
	switch {
	case n != 1:
		return field.ErrorList{field.Invalid(p.Child("valueFrom"), "", fmt.Sprintf("may have exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef or fileKeyRef; it has %d", n))}
	case e.Value != "":
		return field.ErrorList{field.Invalid(p.Child("valueFrom"), "", "may not be specified when `value` is not empty")}
	}
	return nil
}

func volumeErrors(p *field.Path, v corev1.Volume) field.ErrorList {
	var errs field.ErrorList
	if n := setFields(v.VolumeSource); n != 1 {
		errs = append(errs, field.Invalid(p, v.Name, fmt.Sprintf("must have exactly one volume source (configMap, secret, emptyDir, persistentVolumeClaim, ...); it has %d", n)))
	}
	if h := v.HostPath; h != nil && h.Type != nil {
		errs = append(errs, enum(p.Child("hostPath", "type"), string(*h.Type), string(corev1.HostPathUnset), string(corev1.HostPathDirectoryOrCreate),
			string(corev1.HostPathDirectory), string(corev1.HostPathFileOrCreate), string(corev1.HostPathFile), string(corev1.HostPathSocket),
			string(corev1.HostPathCharDev), string(corev1.HostPathBlockDev))...)
	}
	if e := v.EmptyDir; e != nil && e.Medium != corev1.StorageMediumDefault && e.Medium != corev1.StorageMediumMemory && e.Medium != corev1.StorageMediumHugePages {
		errs = append(errs, enum(p.Child("emptyDir", "medium"), string(e.Medium), "", string(corev1.StorageMediumMemory), string(corev1.StorageMediumHugePages))...)
	}
	return errs
}

func seccompErrors(p *field.Path, sp *corev1.SeccompProfile) field.ErrorList {
	if sp == nil {
		return nil
	}
	errs := enum(p.Child("type"), string(sp.Type), string(corev1.SeccompProfileTypeRuntimeDefault), string(corev1.SeccompProfileTypeUnconfined), string(corev1.SeccompProfileTypeLocalhost))
	if (sp.Type == corev1.SeccompProfileTypeLocalhost) != (sp.LocalhostProfile != nil) {
		errs = append(errs, field.Invalid(p.Child("localhostProfile"), sp.LocalhostProfile, "must be set if and only if type is Localhost"))
	}
	return errs
}

func appArmorErrors(p *field.Path, ap *corev1.AppArmorProfile) field.ErrorList {
	if ap == nil {
		return nil
	}
	errs := enum(p.Child("type"), string(ap.Type), string(corev1.AppArmorProfileTypeRuntimeDefault), string(corev1.AppArmorProfileTypeUnconfined), string(corev1.AppArmorProfileTypeLocalhost))
	if (ap.Type == corev1.AppArmorProfileTypeLocalhost) != (ap.LocalhostProfile != nil) {
		errs = append(errs, field.Invalid(p.Child("localhostProfile"), ap.LocalhostProfile, "must be set if and only if type is Localhost"))
	}
	return errs
}

// setFields counts the non-nil pointer fields of a one-of struct.
func setFields(v any) int {
	rv := reflect.ValueOf(v)
	n := 0
	for i := 0; i < rv.NumField(); i++ {
		if f := rv.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			n++
		}
	}
	return n
}
